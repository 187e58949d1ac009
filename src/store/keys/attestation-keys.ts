import type { AttestationPublicJwk } from '../../protocol/dsse';
import { SealError } from '../errors';
import type { BlobStore } from '../store';
import { open, seal, type Sealed } from './seal';
import { attestationKeysKey } from '../layout';

/**
 * The registry's attestation keys (src/provenance/): Ed25519 key pairs that
 * sign the provenance statements and publish attestations of one hostname,
 * kept in one R2 object `.attestation-keys/HOST.json` (strongly consistent,
 * written only conditionally, so two publishes racing to create the first
 * key, or a rotation racing a publish, never lose a key that signed). The
 * private halves are sealed under SIGNING_KEY_SECRET like the held OpenPGP
 * keys (seal.ts), bound to hostname and kid. The last key signs; the others
 * stay listed forever so statements they signed keep verifying.
 *
 * Rotation: `npm run keys -- attestation-rotate` (scripts/keys.ts).
 */

export interface AttestationKeyEntry {
  public: AttestationPublicJwk;
  sealed: Sealed;
}

interface KeysObject {
  keys: AttestationKeyEntry[];
}

const sealedFor = (hostname: string, kid: string) => `attestation-key:v1:${hostname}:${kid}`;

/** The public keys of `hostname`, oldest first ([] when none was made yet). Throws SealError for a damaged object. */
export async function attestationPublicKeys(blobs: BlobStore, hostname: string): Promise<AttestationPublicJwk[]> {
  return (await readKeys(blobs, hostname)).object.keys.map((k) => k.public);
}

/**
 * The key that signs now (the newest), opened with `secret`; the first key is
 * made when `hostname` has none (created only if absent; a concurrent
 * creator's key wins and is used). Throws SealError when the secret is
 * missing, short or does not open the stored key.
 */
export async function currentAttestationKey(blobs: BlobStore, secret: string, hostname: string): Promise<{ kid: string; privateKey: CryptoKey }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { object, etag } = await readKeys(blobs, hostname);
    const newest = object.keys.at(-1);
    if (newest) return { kid: newest.public.kid, privateKey: await openKey(secret, hostname, newest) };
    const made = await makeKey(secret, hostname);
    if (await writeKeys(blobs, hostname, { keys: [made.entry] }, etag)) return { kid: made.entry.public.kid, privateKey: made.privateKey };
  }
  throw new SealError(`the attestation keys of ${hostname} kept changing while a key was being made; try again`);
}

/**
 * Adds a new key that signs from now on; older keys stay listed (their
 * statements keep verifying). Resolves with the new public key. Throws
 * SealError for a missing or short secret (nothing written).
 */
export async function rotateAttestationKey(blobs: BlobStore, secret: string, hostname: string, now = new Date()): Promise<AttestationPublicJwk> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { object, etag } = await readKeys(blobs, hostname);
    const made = await makeKey(secret, hostname, now);
    if (await writeKeys(blobs, hostname, { keys: [...object.keys, made.entry] }, etag)) return made.entry.public;
  }
  throw new SealError(`the attestation keys of ${hostname} kept changing; try the rotation again`);
}

async function makeKey(secret: string, hostname: string, now = new Date()): Promise<{ entry: AttestationKeyEntry; privateKey: CryptoKey }> {
  const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const publicJwk = (await crypto.subtle.exportKey('jwk', pair.publicKey)) as JsonWebKey;
  const privateJwk = (await crypto.subtle.exportKey('jwk', pair.privateKey)) as JsonWebKey;
  // kid: the first 16 bytes of SHA-256 over the raw public key, hex — stable, and names the key everywhere.
  const raw = new Uint8Array((await crypto.subtle.exportKey('raw', pair.publicKey)) as ArrayBuffer);
  const kid = [...new Uint8Array(await crypto.subtle.digest('SHA-256', raw)).subarray(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
  const sealed = await seal(secret, new TextEncoder().encode(JSON.stringify({ d: privateJwk.d, x: privateJwk.x })), sealedFor(hostname, kid));
  const privateKey = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: privateJwk.x!, d: privateJwk.d! }, { name: 'Ed25519' }, false, [
    'sign',
  ]);
  return {
    entry: { public: { kty: 'OKP', crv: 'Ed25519', x: publicJwk.x!, kid, alg: 'EdDSA', use: 'sig', created: now.toISOString() }, sealed },
    privateKey,
  };
}

// Opened keys of this isolate, by hostname, kid and public key (the secret that opened them is checked once).
const openedKeys = new Map<string, { secret: string; key: CryptoKey }>();

async function openKey(secret: string, hostname: string, entry: AttestationKeyEntry): Promise<CryptoKey> {
  const id = `${hostname}\n${entry.public.kid}\n${entry.public.x}`;
  const cached = openedKeys.get(id);
  if (cached && cached.secret === secret) return cached.key;
  const key = await openSealedKey(secret, hostname, entry);
  openedKeys.set(id, { secret, key });
  return key;
}

async function openSealedKey(secret: string, hostname: string, entry: AttestationKeyEntry): Promise<CryptoKey> {
  const opened = JSON.parse(new TextDecoder().decode(await open(secret, entry.sealed, sealedFor(hostname, entry.public.kid)))) as { d: string; x: string };
  if (opened.x !== entry.public.x) throw new SealError(`the sealed attestation key ${entry.public.kid} is not the listed one`);
  return crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: opened.x, d: opened.d }, { name: 'Ed25519' }, false, ['sign']);
}

async function readKeys(blobs: BlobStore, hostname: string): Promise<{ object: KeysObject; etag: string | null }> {
  const stored = await blobs.get(attestationKeysKey(hostname));
  if (!stored) return { object: { keys: [] }, etag: null };
  try {
    const object = JSON.parse(await stored.text()) as KeysObject;
    if (
      !Array.isArray(object.keys) ||
      !object.keys.every((k) => typeof k?.public?.kid === 'string' && typeof k.public.x === 'string' && typeof k.sealed?.ciphertext === 'string')
    )
      throw new Error('shape');
    return { object, etag: stored.etag };
  } catch {
    throw new SealError(`the attestation keys object ${attestationKeysKey(hostname)} is damaged`);
  }
}

async function writeKeys(blobs: BlobStore, hostname: string, object: KeysObject, etag: string | null): Promise<boolean> {
  const written = await blobs.put(attestationKeysKey(hostname), JSON.stringify(object), {
    httpMetadata: { contentType: 'application/json' },
    onlyIf: etag === null ? { etagDoesNotMatch: '*' } : { etagMatches: etag },
  });
  return written !== null;
}
