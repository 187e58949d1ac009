import { ConfigError } from '../../config';

/**
 * HMAC-SHA256 keyed with URL_SIGNING_SECRET: the one key helper behind
 * signed release-file URLs (signed-urls.ts) and token sessions
 * (session.ts). Each signs a differently prefixed string, so a MAC made for
 * one never verifies as the other. The imported key is kept per isolate
 * while the secret stays the same.
 */

let cachedKey: { secret: string; key: Promise<CryptoKey> } | undefined;

/**
 * The HMAC-SHA256 of `data` under `secret` (Settings.signingSecret). Throws
 * ConfigError (a server misconfiguration, so a 500) when the secret is not
 * set.
 */
export async function hmacSha256(secret: string, data: string): Promise<Uint8Array> {
  if (secret === '') {
    throw new ConfigError('URL_SIGNING_SECRET is not set; private mode needs it (wrangler secret put URL_SIGNING_SECRET, locally .dev.vars)');
  }
  if (cachedKey?.secret !== secret) {
    const key = crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    cachedKey = { secret, key };
  }
  return new Uint8Array(await crypto.subtle.sign('HMAC', await cachedKey.key, new TextEncoder().encode(data)));
}
