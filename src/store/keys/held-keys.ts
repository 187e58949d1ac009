import { heldSigningKeyKey, signingKeysKey } from '../layout';
import type { KvStore } from '../store';
import type { SigningKey } from '../types';
import { open, seal, type Sealed } from './seal';
import { SealError } from '../errors';
import { rsaDetachedSigner, type DetachedSigner, type RsaSigningKey } from '../../protocol/openpgp-rsa-signer';

/**
 * Signing keys held by the registry: a namespace's private OpenPGP key kept
 * in KV (held-signing-keys/HOST/NS) sealed under the Worker secret
 * SIGNING_KEY_SECRET (seal.ts), so a CI job publishing with only its OIDC
 * token gets its SHA256SUMS signed without ever holding a private key.
 *
 * - One held key per namespace; storing another replaces it (rotation). The
 *   public half is registered among the namespace's keys like any other, and
 *   every version record keeps the key that signed it, so versions signed by
 *   a rotated-out key keep serving that key.
 * - The private key is never returned by any route or command: this module
 *   exports no reader of it, only `signShasumsWithHeldKey`, which the publish
 *   route calls after the publish was authorised for the namespace.
 * - A held key whose public half was removed from the namespace (`npm run
 *   keys -- remove`) no longer signs.
 */

export interface HeldKeyRecord {
  /** The key's 16-hex-digit id, as in signing_keys. */
  keyId: string;
  /** ISO 8601 time it was stored. */
  created: string;
  /** The armored private key (unencrypted OpenPGP), sealed. */
  sealed: Sealed;
}

/** The store a held key lives in (any Store, or the scripts' KV-only handle). */
export interface HeldKeyStore {
  kv: KvStore;
}

/** Additional data sealing binds the key to: another namespace's record does not open here. */
const sealedFor = (hostname: string, namespace: string, keyId: string) => `held-signing-key:v1:${hostname}/${namespace}:${keyId}`;

/**
 * Seals `armoredPrivateKey` (an unencrypted OpenPGP private key whose id is
 * `keyId`) under `secret` and stores it as the namespace's held key,
 * replacing any previous one. Throws SealError for a missing or short secret
 * (nothing written).
 */
export async function storeHeldKey(
  kv: KvStore,
  secret: string,
  hostname: string,
  namespace: string,
  keyId: string,
  armoredPrivateKey: string,
  now = new Date(),
): Promise<HeldKeyRecord> {
  const sealed = await seal(secret, new TextEncoder().encode(armoredPrivateKey), sealedFor(hostname, namespace, keyId));
  const record: HeldKeyRecord = { keyId, created: now.toISOString(), sealed };
  await kv.put(heldSigningKeyKey(hostname, namespace), JSON.stringify(record));
  return record;
}

/** The namespace's held key's id and creation time (never the key); null when it has none or the record is damaged. */
export async function heldKeyInfo(kv: KvStore, hostname: string, namespace: string): Promise<{ keyId: string; created: string } | null> {
  const record = await readRecord(kv, hostname, namespace);
  return record ? { keyId: record.keyId, created: record.created } : null;
}

/** Deletes the namespace's held key when its id is `keyId` (any held key when omitted); true when one was deleted. */
export async function deleteHeldKey(kv: KvStore, hostname: string, namespace: string, keyId?: string): Promise<boolean> {
  const record = await readRecord(kv, hostname, namespace);
  if (!record || (keyId !== undefined && record.keyId !== keyId.toUpperCase())) return false;
  await kv.delete(heldSigningKeyKey(hostname, namespace));
  return true;
}

/**
 * Signs `sums` (a release's SHA256SUMS document) with the namespace's held
 * key: a binary detached OpenPGP signature, as Terraform and `gpg --verify`
 * check it. Call only for a publish already authorised for `namespace`.
 * Resolves null when the namespace has no held key, or its public half is no
 * longer registered for the namespace. Throws SealError when
 * `config.signingKeySecret` is missing or does not open the stored key (a
 * server misconfiguration).
 *
 * Cost: 2 KV reads; CPU of one OpenPGP signature (see README "Publishing
 * from CI" for the measured figures).
 */
export async function signShasumsWithHeldKey(
  store: HeldKeyStore,
  config: { signingKeySecret: string },
  hostname: string,
  namespace: string,
  sums: Uint8Array,
): Promise<{ signature: Uint8Array; keyId: string } | null> {
  const [record, registered] = await Promise.all([readRecord(store.kv, hostname, namespace), store.kv.get(signingKeysKey(hostname, namespace), 'text')]);
  if (!record) return null;
  const keys = registered ? (JSON.parse(registered) as SigningKey[]) : [];
  if (!keys.some((k) => k.key_id === record.keyId)) return null;
  return { signature: await signWithRecord(config.signingKeySecret, hostname, namespace, record, sums), keyId: record.keyId };
}

/**
 * The namespace's held key, read once for a publish: its id and creation
 * time, the namespace's registered keys (read with it), and a signer for
 * SHA256SUMS (as signShasumsWithHeldKey, without reading again). Null when
 * the namespace has no held key (or its record is damaged). Cost: 2 KV reads.
 */
export async function heldKeyForPublish(
  store: HeldKeyStore,
  config: { signingKeySecret: string },
  hostname: string,
  namespace: string,
): Promise<{ keyId: string; created: string; registered: SigningKey[]; sign(sums: Uint8Array): Promise<Uint8Array> } | null> {
  const [record, registered] = await Promise.all([readRecord(store.kv, hostname, namespace), store.kv.get(signingKeysKey(hostname, namespace), 'text')]);
  if (!record) return null;
  return {
    keyId: record.keyId,
    created: record.created,
    registered: registered ? (JSON.parse(registered) as SigningKey[]) : [],
    sign: (sums) => signWithRecord(config.signingKeySecret, hostname, namespace, record, sums),
  };
}

/**
 * Signers of unsealed private keys, per isolate: opening the sealed key (HKDF + AES-GCM), parsing it
 * (openpgp.readPrivateKey) and, for RSA, importing it into WebCrypto cost more than the signature. Keyed by
 * everything that decides the result — the secret, where the key belongs and the exact sealed bytes — so a
 * rotated key, a changed secret or an altered record is opened anew (and fails as before); a failure is not kept.
 */
const openedKeys = new Map<string, Promise<DetachedSigner>>();
const OPENED_KEYS_MAX = 32;

async function signWithRecord(secret: string, hostname: string, namespace: string, record: HeldKeyRecord, sums: Uint8Array): Promise<Uint8Array> {
  const data = sealedFor(hostname, namespace, record.keyId);
  const cacheKey = JSON.stringify([secret, data, record.sealed]);
  let opened = openedKeys.get(cacheKey);
  if (!opened) {
    opened = openSigner(secret, data, record, namespace);
    if (openedKeys.size >= OPENED_KEYS_MAX) openedKeys.delete(openedKeys.keys().next().value!);
    openedKeys.set(cacheKey, opened);
    opened.catch(() => openedKeys.delete(cacheKey));
  }
  return (await opened)(sums);
}

/** Opens the sealed key and returns what signs with it (detachedSigner). Throws SealError when the key is not the record's. */
async function openSigner(secret: string, data: string, record: HeldKeyRecord, namespace: string): Promise<DetachedSigner> {
  const armored = new TextDecoder().decode(await open(secret, record.sealed, data));
  // openpgp is loaded only when a publish signs: the read routes never evaluate it.
  const openpgp = await import('openpgp');
  const privateKey = await openpgp.readPrivateKey({ armoredKey: armored });
  if (privateKey.getKeyID().toHex().toUpperCase() !== record.keyId) throw new SealError(`the registry-held key of ${namespace} is not key ${record.keyId}`);
  return detachedSigner(privateKey);
}

/**
 * What makes binary detached signatures with `privateKey` (unencrypted): for an RSA v4 signing key, WebCrypto
 * with the key imported once (src/protocol/openpgp-rsa-signer.ts: openpgp.js imports it again for every
 * signature, ~5 ms for RSA-4096); for any other key, or one WebCrypto refuses to import (openpgp.js falls
 * back the same way), openpgp.sign.
 */
export async function detachedSigner(privateKey: import('openpgp').PrivateKey): Promise<DetachedSigner> {
  const openpgp = await import('openpgp');
  const viaOpenpgp: DetachedSigner = async (sums) =>
    openpgp.sign({ message: await openpgp.createMessage({ binary: sums }), signingKeys: privateKey, detached: true, format: 'binary' });
  const rsa = rsaMaterial(await privateKey.getSigningKey());
  return rsa ? rsaDetachedSigner(rsa).catch(() => viaOpenpgp) : viaOpenpgp;
}

/** The RSA material of the key openpgp.sign would use, when it is an RSA v4 key; else null. */
function rsaMaterial(signingKey: import('openpgp').PrivateKey | import('openpgp').Subkey): RsaSigningKey | null {
  const packet = signingKey.keyPacket as unknown as {
    version: number;
    algorithm: number;
    publicParams?: { n?: Uint8Array; e?: Uint8Array };
    privateParams?: { d?: Uint8Array; p?: Uint8Array; q?: Uint8Array; u?: Uint8Array };
  };
  const { n, e } = packet.publicParams ?? {};
  const { d, p, q, u } = packet.privateParams ?? {};
  if (packet.version !== 4 || (packet.algorithm !== RSA_ENCRYPT_SIGN && packet.algorithm !== RSA_SIGN) || !n || !e || !d || !p || !q || !u) return null;
  const fingerprint = Uint8Array.from(signingKey.getFingerprint().match(/../g) ?? [], (h) => Number.parseInt(h, 16));
  return { n, e, d, p, q, u, fingerprint };
}
// RFC 4880 §9.1 public-key algorithm ids (openpgp.enums.publicKey; the enums are not loaded here).
const RSA_ENCRYPT_SIGN = 1;
const RSA_SIGN = 3;

async function readRecord(kv: KvStore, hostname: string, namespace: string): Promise<HeldKeyRecord | null> {
  const text = await kv.get(heldSigningKeyKey(hostname, namespace), 'text');
  if (text === null) return null;
  try {
    const r = JSON.parse(text) as HeldKeyRecord;
    if (typeof r.keyId !== 'string' || typeof r.created !== 'string' || typeof r.sealed?.ciphertext !== 'string') return null;
    return r;
  } catch {
    return null;
  }
}
