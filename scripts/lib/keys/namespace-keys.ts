import { InputError } from '../../../src/protocol/index';
import { mapLimit } from '../../../src/concurrency';
import { namespacePagesPrefix } from '../../../src/store/layout';
import type { ProviderPageData } from '../../../src/store/pages/read';
import { listAllKeys } from '../../../src/store/list';
import { readSigningKeys, writeSigningKeys } from '../../../src/store/providers/signing-keys';
import type { KvStore } from '../../../src/store/store';
import type { SigningKey } from '../../../src/store/types';
import { describeKey } from './keyring';

/**
 * A namespace's public signing keys in the store: add, remove, list. The
 * keys listed are the ones new releases may be signed with (and a supplied
 * SHA256SUMS.sig is verified against); every version record keeps the key
 * that signed it, so a removed (rotated-out) key stays served for those
 * versions.
 */

export interface KeyListing {
  key_id: string;
  /** "registered": a current key of the namespace; "retired": removed but still served for the versions it signed. */
  status: 'registered' | 'retired';
  algorithm: string;
  created: string;
  user_id: string;
  /** Versions signed with it: "type version". */
  signed: string[];
}

/** Adds a public key to the namespace; returns false when it was already there. */
export async function addNamespaceKey(kv: KvStore, hostname: string, namespace: string, key: SigningKey): Promise<boolean> {
  const keys = await readSigningKeys(kv, hostname, namespace);
  if (keys.some((k) => k.key_id === key.key_id)) return false;
  await writeSigningKeys(kv, hostname, namespace, [...keys, key]);
  return true;
}

/**
 * Removes a key from the namespace (versions it signed keep serving it).
 * Throws InputError when the namespace has no such key. Returns the versions
 * it signed.
 */
export async function removeNamespaceKey(kv: KvStore, hostname: string, namespace: string, keyId: string): Promise<string[]> {
  const id = normaliseKeyId(keyId);
  const keys = await readSigningKeys(kv, hostname, namespace);
  if (!keys.some((k) => k.key_id === id)) {
    throw new InputError(`namespace ${namespace} has no signing key ${id} (it has: ${keys.map((k) => k.key_id).join(', ') || 'none'})`);
  }
  await writeSigningKeys(
    kv,
    hostname,
    namespace,
    keys.filter((k) => k.key_id !== id),
  );
  return (await namespaceRecords(kv, hostname, namespace)).filter((r) => r.signingKey.key_id === id).map(signedName);
}

/** The namespace's registered keys, then retired keys still served by versions they signed. */
export async function listNamespaceKeys(kv: KvStore, hostname: string, namespace: string): Promise<KeyListing[]> {
  const keys = await readSigningKeys(kv, hostname, namespace);
  const records = await namespaceRecords(kv, hostname, namespace);
  const signedBy = new Map<string, { key: SigningKey; versions: string[] }>();
  for (const record of records) {
    const entry = signedBy.get(record.signingKey.key_id) ?? { key: record.signingKey, versions: [] };
    entry.versions.push(signedName(record));
    signedBy.set(record.signingKey.key_id, entry);
  }
  const listing: KeyListing[] = [];
  const describe = async (key: SigningKey, status: KeyListing['status']) => {
    const info = await describeKey(key.ascii_armor).catch(() => ({ algorithm: '?', created: '?', userId: '?' }));
    listing.push({
      key_id: key.key_id,
      status,
      algorithm: info.algorithm,
      created: info.created,
      user_id: info.userId,
      signed: signedBy.get(key.key_id)?.versions ?? [],
    });
  };
  for (const key of keys) await describe(key, 'registered');
  for (const [id, { key }] of signedBy) if (!keys.some((k) => k.key_id === id)) await describe(key, 'retired');
  return listing;
}

/** "ABCDEF0123456789", accepting lower case and a 0x prefix; InputError otherwise. */
export function normaliseKeyId(raw: string): string {
  const id = raw.replace(/^0x/i, '').toUpperCase();
  if (!/^[0-9A-F]{16}$/.test(id)) throw new InputError(`key id "${raw}" must be 16 hex digits, as printed by npm run keys -- list`);
  return id;
}

/**
 * Which key signed each version of the namespace: from every provider's page
 * data (one KV read per provider, not per version; it lists each version with
 * its key id and every key with its armor).
 */
async function namespaceRecords(kv: KvStore, hostname: string, namespace: string): Promise<SignedVersion[]> {
  const names = await listAllKeys(kv, namespacePagesPrefix(hostname, namespace));
  const pages = await mapLimit(names, 16, async (name) => {
    const text = await kv.get(name, 'text');
    return text === null ? null : (JSON.parse(text) as ProviderPageData);
  });
  return pages.flatMap((page) => {
    if (!page) return [];
    const keys = new Map(page.keys.map((k) => [k.key_id, { key_id: k.key_id, ascii_armor: k.ascii_armor }]));
    return page.versions.map((v) => ({ type: page.address.type, version: v.version, signingKey: keys.get(v.keyId) ?? { key_id: v.keyId, ascii_armor: '' } }));
  });
}

interface SignedVersion {
  type: string;
  version: string;
  signingKey: SigningKey;
}

const signedName = (record: SignedVersion) => `${record.type} ${record.version}`;
