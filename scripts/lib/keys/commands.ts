import { readFileSync } from 'node:fs';
import { InputError } from '../../../src/protocol/index';
import { deleteHeldKey, heldKeyInfo, storeHeldKey } from '../../../src/store/keys/held-keys';
import type { BlobStore, KvStore } from '../../../src/store/store';
import { audited } from '../audit';
import { say } from '../cli';
import { explicitPrivateKey, generateSigningKey, KEY_ENV, PASSPHRASE_ENV, readPublicKey, writePrivateKeyFile, type KeyType } from './keyring';
import { addNamespaceKey, listNamespaceKeys, removeNamespaceKey } from './namespace-keys';

/**
 * The commands of `npm run keys` (scripts/keys.ts parses the command line and opens the store): generate (to a
 * file or held by the registry), import, list and remove a namespace's OpenPGP signing keys, each audited. Private
 * keys stay in files or sealed in the store and are never printed.
 */

/** What every command works on: the namespace's store, where to audit, and how to answer. */
export interface KeysRun {
  kv: KvStore;
  /** The audit log's store; null for list (it only reads KV). */
  auditStore: { blobs: BlobStore } | null;
  /** The store's description, for messages. */
  where: string;
  hostname: string;
  namespace: string;
  /** "HOST/NS", the audit entry's target. */
  target: string;
  remote: boolean | undefined;
  json: boolean;
}

const describeType = (type: KeyType) => (type === 'ecc' ? 'ed25519 (OpenPGP v4)' : 'RSA-4096 (OpenPGP v4)');

/** `generate --held-by-registry`: a new key sealed under `secret` in the store and registered (audited); nothing written to a file. */
export async function generateHeld(keys: KeysRun, type: KeyType, name: string, secret: string): Promise<void> {
  const { hostname, namespace } = keys;
  const generated = await generateSigningKey({ type, name });
  await audited(
    keys.auditStore,
    keys.remote,
    { action: 'key.add', target: keys.target },
    async () => {
      await storeHeldKey(keys.kv, secret, hostname, namespace, generated.publicKey.key_id, generated.armoredPrivateKey);
      return addNamespaceKey(keys.kv, hostname, namespace, generated.publicKey);
    },
    () => ({ outcome: 'ok', reason: `generated key ${generated.publicKey.key_id}, held by the registry` }),
  );
  say(`generated ${describeType(type)} key ${generated.publicKey.key_id}, held by the registry`);
  say(`  private key: sealed under SIGNING_KEY_SECRET in ${keys.where}; never written to a file or printed`);
  say(`  public key registered for ${hostname}/${namespace}; publishes authorised for ${namespace} are signed with it`);
  if (keys.json) process.stdout.write(`${JSON.stringify({ key_id: generated.publicKey.key_id, held_by_registry: true })}\n`);
}

/** `generate`: a new key written to `path` (encrypted with the passphrase variable when set), its public key registered (audited). */
export async function generateToFile(keys: KeysRun, type: KeyType, name: string, path: string): Promise<void> {
  const { hostname, namespace } = keys;
  const passphrase = process.env[PASSPHRASE_ENV] || undefined;
  const generated = await generateSigningKey({ type, name, ...(passphrase ? { passphrase } : {}) });
  writePrivateKeyFile(path, generated.armoredPrivateKey);
  await audited(
    keys.auditStore,
    keys.remote,
    { action: 'key.add', target: keys.target },
    () => addNamespaceKey(keys.kv, hostname, namespace, generated.publicKey),
    () => ({ outcome: 'ok', reason: `generated key ${generated.publicKey.key_id}` }),
  );
  say(`generated ${describeType(type)} key ${generated.publicKey.key_id}`);
  say(`  private key: ${path}${passphrase ? ' (encrypted with the passphrase)' : ' (unencrypted; keep it out of the repository)'}`);
  say(`  public key registered for ${hostname}/${namespace} in ${keys.where}`);
  if (keys.json) process.stdout.write(`${JSON.stringify({ key_id: generated.publicKey.key_id, key_file: path })}\n`);
}

/** `import --held-by-registry`: the private key sealed under `secret` in the store and its public key registered (audited). */
export async function importHeld(keys: KeysRun, loaded: NonNullable<ImportedKey['held']>, secret: string): Promise<void> {
  const { hostname, namespace } = keys;
  const added = await audited(
    keys.auditStore,
    keys.remote,
    { action: 'key.add', target: keys.target },
    async () => {
      await storeHeldKey(keys.kv, secret, hostname, namespace, loaded.publicKey.key_id, loaded.privateKey.armor());
      return addNamespaceKey(keys.kv, hostname, namespace, loaded.publicKey);
    },
    () => ({ outcome: 'ok', reason: `imported key ${loaded.publicKey.key_id}, held by the registry` }),
  );
  say(
    `key ${loaded.publicKey.key_id} (from ${loaded.source}) is now held by the registry for ${hostname}/${namespace}, sealed under SIGNING_KEY_SECRET in ${keys.where}${added ? '; public key registered' : ''}`,
  );
  say('  the registry signs publishes authorised for the namespace with it; delete your copy if only the registry should sign');
  if (keys.json) process.stdout.write(`${JSON.stringify({ key_id: loaded.publicKey.key_id, added, held_by_registry: true })}\n`);
}

/** `import`: the public key registered (audited 'unchanged' when it already was). */
export async function importPublic(keys: KeysRun, key: ImportedKey['publicKey']): Promise<void> {
  const { hostname, namespace } = keys;
  const added = await audited(
    keys.auditStore,
    keys.remote,
    { action: 'key.add', target: keys.target },
    () => addNamespaceKey(keys.kv, hostname, namespace, key),
    (fresh) => ({ outcome: fresh ? 'ok' : 'unchanged', reason: `imported key ${key.key_id}` }),
  );
  say(
    added
      ? `registered key ${key.key_id} for ${hostname}/${namespace} in ${keys.where}`
      : `key ${key.key_id} is already registered for ${hostname}/${namespace}`,
  );
  if (keys.json) process.stdout.write(`${JSON.stringify({ key_id: key.key_id, added })}\n`);
}

/** `list`: the namespace's keys (and which one the registry holds), as text or --json. */
export async function listKeys(keys: KeysRun): Promise<void> {
  const { hostname, namespace } = keys;
  const listed = await listNamespaceKeys(keys.kv, hostname, namespace);
  const heldKey = await heldKeyInfo(keys.kv, hostname, namespace);
  if (keys.json) {
    process.stdout.write(`${JSON.stringify({ namespace: `${hostname}/${namespace}`, keys: listed, held_by_registry: heldKey?.keyId ?? null })}\n`);
  } else if (listed.length === 0) {
    say(`${hostname}/${namespace} has no signing keys (npm run keys -- generate --namespace ${namespace})`);
  } else {
    for (const key of listed) {
      const signed = key.signed.length ? `; signed ${key.signed.join(', ')}` : '';
      const where = key.key_id === heldKey?.keyId ? '  (held by the registry)' : '';
      process.stdout.write(`${key.key_id}  ${key.status.padEnd(10)}  ${key.algorithm}  created ${key.created.slice(0, 10)}  ${key.user_id}${signed}${where}\n`);
    }
  }
}

/** `remove --key-id ID`: the key retired (and its registry-held private key deleted), audited; says which versions still serve it. */
export async function removeKey(keys: KeysRun, keyId: string): Promise<void> {
  const { hostname, namespace } = keys;
  let heldDeleted = false;
  const signed = await audited(
    keys.auditStore,
    keys.remote,
    { action: 'key.remove', target: keys.target, reason: `key ${keyId.toUpperCase()}` },
    async () => {
      const versions = await removeNamespaceKey(keys.kv, hostname, namespace, keyId);
      heldDeleted = await deleteHeldKey(keys.kv, hostname, namespace, keyId.replace(/^0x/i, ''));
      return versions;
    },
    () => ({ outcome: 'ok', reason: `removed key ${keyId.toUpperCase()}${heldDeleted ? ' and its registry-held private key' : ''}` }),
  );
  if (heldDeleted) say('  the registry-held private key was deleted');
  say(`removed key ${keyId.toUpperCase()} from ${hostname}/${namespace}: new releases can no longer be signed with it`);
  if (signed.length) say(`  still served for the versions it signed: ${signed.join(', ')}`);
}

export type ImportedKey = Awaited<ReturnType<typeof keyToImport>>;

/**
 * The key `keys import` registers, read and checked before anything else
 * happens: from --key-file (public, or the public part of a private key) or
 * EDGE_REGISTRY_SIGNING_KEY; with --held-by-registry the private key itself.
 * Throws InputError naming the file or variable when it is missing,
 * unreadable or not a usable key.
 */
export async function keyToImport(
  keyFile: string | undefined,
  held: boolean,
): Promise<{
  publicKey: Awaited<ReturnType<typeof readPublicKey>>;
  held: NonNullable<Awaited<ReturnType<typeof explicitPrivateKey>>> | null;
}> {
  if (held) {
    const loaded = await explicitPrivateKey({ keyFile });
    if (!loaded) throw new InputError(`import --held-by-registry needs the private key: --key-file PATH or ${KEY_ENV}`);
    return { publicKey: loaded.publicKey, held: loaded };
  }
  if (keyFile) {
    let text: string;
    try {
      text = readFileSync(keyFile, 'utf8');
    } catch (error) {
      throw new InputError(`--key-file ${keyFile}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return { publicKey: await readPublicKey(text, `--key-file ${keyFile}`), held: null };
  }
  const fromEnv = await explicitPrivateKey({});
  if (!fromEnv) throw new InputError(`import needs --key-file PATH (public or private key) or ${KEY_ENV}`);
  return { publicKey: fromEnv.publicKey, held: null };
}
