import { ConfigError, type Settings } from '../../config';
import { base64url, fromBase64url } from './bytes';
import { deriveAesGcmKey } from '../../store/keys/aes-key';

/**
 * Sealed values (the broker's in-flight login state and people's session
 * cookies): JSON encrypted and authenticated with AES-256-GCM under a key
 * derived by HKDF-SHA-256 from URL_SIGNING_SECRET with a per-purpose `info`,
 * so a value sealed for one purpose never opens for another and the
 * signed-URL HMAC key is never used directly. The sealed form is
 * base64url(12-byte IV ‖ ciphertext ‖ 16-byte tag): unreadable to the
 * browser, and any change to any byte — the last ones included — fails
 * GCM's tag check.
 */

export type SealPurpose = 'login-flow' | 'person-session';

const keys = new Map<string, Promise<CryptoKey>>();
const SALT = new TextEncoder().encode('edge-registry seal v1');

/** What sealing needs of the settings: Settings.signingSecret (URL_SIGNING_SECRET). */
type SealSettings = Pick<Settings, 'signingSecret'>;

function sealKey(config: SealSettings, purpose: SealPurpose): Promise<CryptoKey> {
  const secret = config.signingSecret;
  if (secret === '') throw new ConfigError('URL_SIGNING_SECRET is not set; sign-in needs it (wrangler secret put URL_SIGNING_SECRET, locally .dev.vars)');
  const id = `${purpose}\n${secret}`;
  let key = keys.get(id);
  if (!key) {
    key = deriveAesGcmKey(secret, SALT, purpose);
    if (keys.size > 8) keys.clear();
    keys.set(id, key);
  }
  return key;
}

/** Seals `value` (JSON-serialisable) for `purpose`. Throws ConfigError only, when URL_SIGNING_SECRET is unset. */
export async function seal(config: SealSettings, purpose: SealPurpose, value: unknown): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const plain = new TextEncoder().encode(JSON.stringify(value));
  const cipher = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, await sealKey(config, purpose), plain));
  const out = new Uint8Array(iv.byteLength + cipher.byteLength);
  out.set(iv);
  out.set(cipher, iv.byteLength);
  return base64url(out);
}

/** Opens a sealed value: the parsed JSON, or null (never throws for bad input) when it is malformed, altered or sealed for another purpose or key. */
export async function unseal(config: SealSettings, purpose: SealPurpose, sealed: string): Promise<unknown> {
  if (sealed.length > 8192) return null;
  const bytes = fromBase64url(sealed);
  if (bytes === null || bytes.byteLength < 12 + 16) return null;
  try {
    const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.slice(0, 12) }, await sealKey(config, purpose), bytes.slice(12));
    return JSON.parse(new TextDecoder().decode(plain));
  } catch {
    return null;
  }
}
