/**
 * `npm run keys -- generate|import|list|remove --namespace NS [options]`
 *
 * Manages a namespace's OpenPGP signing keys: the public keys are stored in
 * the registry (local state, or --remote KV) and served in signing_keys;
 * private keys stay in files or the environment and are never printed.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { InputError, parseHostname, parseProviderName } from '../src/protocol/index';
import { run, say, SIGNING_STATE_OPTIONS, UsageError } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import { localKeyPath, type KeyType } from './lib/keys/keyring';
import { generateHeld, generateToFile, importHeld, importPublic, keyToImport, listKeys, removeKey, type KeysRun } from './lib/keys/commands';
import { openCommandStore } from './lib/stores/open';
import { heldKeySecret } from './lib/held-keys';

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
