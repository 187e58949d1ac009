/**
 * The one way this registry turns a configured secret into an encryption
 * key: HKDF-SHA-256 (with a `salt` and a per-purpose `info`, so keys for
 * different purposes never coincide and the secret itself is never used as
 * a key) to a non-extractable AES-256-GCM key. Used by the sealed browser
 * values (src/access/crypto/seal.ts) and the registry-held signing keys at rest
 * (src/store/keys/seal.ts).
 */

/** Derives the AES-256-GCM key (encrypt and decrypt) for `secret`, `salt` and `info`. Never throws for any string input. */
export async function deriveAesGcmKey(secret: string, salt: Uint8Array, info: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), 'HKDF', false, ['deriveKey']);
  return crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt, info: new TextEncoder().encode(info) },
    material,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  );
}
