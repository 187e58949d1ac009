import { ConfigError } from '../../protocol/errors';
import { fromBase64, toBase64 } from '../../bytes';
import { deriveAesGcmKey } from './aes-key';
import { SealError, SecretMismatchError } from '../errors';

/**
 * Encryption at rest of a registry-held private key (held-keys.ts), with
 * WebCrypto only: AES-256-GCM under a key derived by HKDF-SHA-256
 * (aes-key.ts) from the Worker secret SIGNING_KEY_SECRET and a
 * random salt per sealed value; the
 * additional data binds the ciphertext to where it belongs (hostname,
 * namespace, key id), so a sealed key copied to another namespace does not
 * open. Any change to salt, iv, ciphertext, data or secret makes `open` fail.
 */

export interface Sealed {
  /** Format version (1: HKDF-SHA-256 → AES-256-GCM). */
  v: 1;
  /** base64 of 16 random bytes (HKDF salt). */
  salt: string;
  /** base64 of 12 random bytes (GCM nonce). */
  iv: string;
  /** base64 of ciphertext + 16-byte tag. */
  ciphertext: string;
}

const INFO = 'edge-registry held signing key v1';
/** Shortest secret accepted (characters): src/config.ts's rule for every secret; `npm start` generates 43. */
/** The shortest secret accepted anywhere (URL_SIGNING_SECRET, SIGNING_KEY_SECRET): src/config.ts refuses shorter ones at start-up. */
export const MIN_SECRET_LENGTH = 32;

async function deriveKey(secret: string, salt: Uint8Array): Promise<CryptoKey> {
  // A misconfiguration, not damage: a 503 naming the setting where a held key is used (src/http/errors.ts).
  if (secret.length < MIN_SECRET_LENGTH) {
    throw new ConfigError(
      `SIGNING_KEY_SECRET is ${secret ? 'shorter than 32 characters' : 'not set'}; generate one with \`openssl rand -base64 32\` (wrangler secret put SIGNING_KEY_SECRET)`,
    );
  }
  return deriveAesGcmKey(secret, salt, INFO);
}

/** Encrypts `plaintext` under `secret`, bound to `additionalData`. Throws ConfigError for a missing or short secret. */
export async function seal(secret: string, plaintext: Uint8Array, additionalData: string): Promise<Sealed> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const key = await deriveKey(secret, salt);
  const ciphertext = new Uint8Array(
    await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: new TextEncoder().encode(additionalData) }, key, plaintext),
  );
  return { v: 1, salt: toBase64(salt), iv: toBase64(iv), ciphertext: toBase64(ciphertext) };
}

/**
 * Decrypts a sealed value. Throws ConfigError when the secret is missing or
 * short, SecretMismatchError (a SealError) when it (or the additional data,
 * or any stored byte) is not the one it was sealed with, SealError for a
 * value of an unknown format.
 */
export async function open(secret: string, sealed: Sealed, additionalData: string): Promise<Uint8Array> {
  if (sealed.v !== 1) throw new SealError(`sealed value of unknown format ${String(sealed.v)}`);
  const key = await deriveKey(secret, decoded(sealed.salt));
  try {
    return new Uint8Array(
      await crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: decoded(sealed.iv), additionalData: new TextEncoder().encode(additionalData) },
        key,
        decoded(sealed.ciphertext),
      ),
    );
  } catch {
    throw new SecretMismatchError(
      'SIGNING_KEY_SECRET does not open the registry-held key (the secret changed, or the stored key was altered or copied from elsewhere): set the secret it was sealed with',
    );
  }
}

function decoded(text: string): Uint8Array {
  const bytes = fromBase64(text);
  if (bytes === null) throw new SealError('the stored registry-held key is damaged (not base64)');
  return bytes;
}
