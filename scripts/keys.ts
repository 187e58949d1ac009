/**
 * `npm run keys -- generate|import|list|remove --namespace NS [options]`
 *
 * Manages a namespace's OpenPGP signing keys: the public keys are stored in
 * the registry (local state, or --remote KV) and served in signing_keys;
 * private keys stay in files or the environment and are never printed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { InputError, parseHostname, parseProviderName } from '../src/protocol/index';
import { run, say, SIGNING_STATE_OPTIONS, UsageError } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import {
  explicitPrivateKey,
  generateSigningKey,
  KEY_ENV,
  localKeyPath,
  PASSPHRASE_ENV,
  readPublicKey,
  writePrivateKeyFile,
  type KeyType,
} from './lib/keys/keyring';
import { addNamespaceKey, listNamespaceKeys, removeNamespaceKey } from './lib/keys/namespace-keys';
import { openCommandStore } from './lib/stores/open';
import { audited } from './lib/audit';
import { heldKeySecret } from './lib/held-keys';
import { deleteHeldKey, heldKeyInfo, storeHeldKey } from '../src/store/keys/held-keys';
import type { BlobStore, KvStore } from '../src/store/store';

const USAGE = `usage: npm run keys -- COMMAND --namespace NS [options]

  generate [--type rsa|ecc] [--key-file PATH | --held-by-registry]
        create a key (RSA-4096 OpenPGP v4 by default; ecc = ed25519, v4), write the private key
        to PATH (default .keys/HOST/NS.asc, git-ignored; encrypted with
        $EDGE_REGISTRY_SIGNING_KEY_PASSPHRASE when set) and register its public key
  import [--key-file PATH] [--held-by-registry]
        register a public key (or the public part of a private key) from PATH or
        $EDGE_REGISTRY_SIGNING_KEY
  --held-by-registry
        the registry keeps the private key, sealed under $SIGNING_KEY_SECRET (locally:
        .dev.vars), and signs the SHA256SUMS of publishes authorised for the namespace
        (CI publishing with --registry); no private key is written or printed; replaces
        the namespace's previous held key (its public key stays served for what it signed)
  list [--json]
        the namespace's keys, and retired keys still served for the versions they signed
  remove --key-id ID
        stop signing with a key; versions it signed keep serving it

  --remote, --env NAME     the KV namespace of wrangler.toml (needs $CLOUDFLARE_ACCOUNT_ID, $CLOUDFLARE_API_TOKEN;
                           generate, import and remove also $R2_ACCESS_KEY_ID, $R2_SECRET_ACCESS_KEY for the audit log)
  --config PATH            wrangler.toml (default ./wrangler.toml)
  --persist-to DIR         local state root (default .wrangler/state)
  --hostname HOST          registry hostname (default REGISTRY_HOSTNAME)`;

run(async () => {
  const parsed = parseKeysArgs();
  if (!parsed) {
    say(USAGE);
    return;
  }
  const { command, values } = parsed;
  if (!values.namespace) throw new UsageError('--namespace is required');
  const namespace = parseProviderName(values.namespace, 'namespace');
  const config = await readRegistryConfig({ configPath: values.config, env: values.env, persistTo: values['persist-to'] });
  const hostname = values.hostname ? parseHostname(values.hostname) : config.hostname;
  const held = values['held-by-registry'] === true;
  const type = checkOptions(command, values, held);
  // The key to import is read before the secret and the store: a missing or wrong key file is the problem
  // to name first (not missing Cloudflare credentials), and nothing starts or writes for a key that can't be used.
  const importing = command === 'import' ? await keyToImport(values['key-file'], held) : null;
  const secret = held ? heldKeySecret(config, values.remote) : '';

  const store = await openCommandStore(config, { remote: values.remote, readOnly: command === 'list' });
  const keys: KeysRun = {
    kv: store.kv,
    auditStore: store.audit,
    where: store.description,
    hostname,
    namespace,
    target: `${hostname}/${namespace}`,
    remote: values.remote,
    json: values.json === true,
  };
  try {
    if (command === 'generate') {
      const name = values.name ?? `edge-registry ${hostname}/${namespace}`;
      if (held) await generateHeld(keys, type, name, secret);
      else
        await generateToFile(
          keys,
          type,
          name,
          values['key-file'] ?? localKeyPath(values['keys-dir'] ?? join(config.projectRoot, '.keys'), hostname, namespace),
        );
    } else if (command === 'import') {
      if (importing!.held) await importHeld(keys, importing!.held, secret);
      else await importPublic(keys, importing!.publicKey);
    } else if (command === 'list') {
      await listKeys(keys);
    } else {
      await removeKey(keys, values['key-id']!);
    }
  } finally {
    await store.close();
  }
}, USAGE);

/**
 * The command line: one command (generate, import, list or remove) and its
 * options, or null for --help. Throws UsageError for another command, more
 * than one, or an unknown option.
 */
function parseKeysArgs() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      ...SIGNING_STATE_OPTIONS,
      namespace: { type: 'string' },
      type: { type: 'string' },
      'key-id': { type: 'string' },
      name: { type: 'string' },
      'held-by-registry': { type: 'boolean' },
    },
  });
  if (values.help) return null;
  const command = positionals[0];
  if (!command || !['generate', 'import', 'list', 'remove'].includes(command) || positionals.length > 1) {
    throw new UsageError(`expected one command: generate, import, list or remove`);
  }
  return { command, values };
}

/**
 * Validates the options that can be checked before anything opens: --type
 * (generate; returned, rsa by default), --key-file with generate --remote,
 * --key-id (remove) and --held-by-registry (generate and import only, without
 * --key-file for generate). Throws UsageError or InputError naming the option.
 */
function checkOptions(command: string, values: { type?: string; remote?: boolean; 'key-file'?: string; 'key-id'?: string }, held: boolean): KeyType {
  let type: KeyType = 'rsa';
  if (command === 'generate') {
    if (values.type && values.type !== 'rsa' && values.type !== 'ecc') throw new UsageError(`--type must be rsa or ecc, not "${values.type}"`);
    type = (values.type as KeyType | undefined) ?? 'rsa';
    if (values.remote && !values['key-file'] && !held) {
      throw new InputError('generate --remote: pass --key-file PATH for the private key (outside the repository), then keep it in your CI secrets');
    }
  }
  if (command === 'remove' && !values['key-id']) throw new UsageError('remove needs --key-id ID');
  if (held && command !== 'generate' && command !== 'import') throw new UsageError('--held-by-registry is an option of generate and import');
  if (held && command === 'generate' && values['key-file'])
    throw new UsageError('generate --held-by-registry writes no private key file: leave out --key-file');
  return type;
}

/** What every command works on: the namespace's store, where to audit, and how to answer. */
interface KeysRun {
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
async function generateHeld(keys: KeysRun, type: KeyType, name: string, secret: string): Promise<void> {
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
async function generateToFile(keys: KeysRun, type: KeyType, name: string, path: string): Promise<void> {
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
async function importHeld(keys: KeysRun, loaded: NonNullable<ImportedKey['held']>, secret: string): Promise<void> {
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
async function importPublic(keys: KeysRun, key: ImportedKey['publicKey']): Promise<void> {
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
async function listKeys(keys: KeysRun): Promise<void> {
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
async function removeKey(keys: KeysRun, keyId: string): Promise<void> {
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

type ImportedKey = Awaited<ReturnType<typeof keyToImport>>;

/**
 * The key `keys import` registers, read and checked before anything else
 * happens: from --key-file (public, or the public part of a private key) or
 * EDGE_REGISTRY_SIGNING_KEY; with --held-by-registry the private key itself.
 * Throws InputError naming the file or variable when it is missing,
 * unreadable or not a usable key.
 */
async function keyToImport(
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
