import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as openpgp from 'openpgp';
import { InputError, type ProviderAddress } from '../../../src/protocol/index';
import type { SigningKey } from '../../../src/store/types';
import type { RegistryConfig } from '../config';
import {
  explicitPrivateKey,
  generateSigningKey,
  loadPrivateKey,
  localKeyPath,
  PASSPHRASE_ENV,
  writePrivateKeyFile,
  KEY_ENV,
  type LoadedKey,
} from '../keys/keyring';

/**
 * Signing a provider release's SHA256SUMS in the publish CLI: which key signs
 * (chooseSigner), and the detached OpenPGP signature Terraform checks —
 * binary (not armored), signature type "binary document", made by the key
 * whose public part is served in signing_keys. Verifying a supplied
 * signature is src/protocol/openpgp-signature.ts (the Worker does it too).
 */

/** A binary detached signature of `document` made with `privateKey`. */
export async function signDetached(document: Uint8Array, privateKey: openpgp.PrivateKey): Promise<Uint8Array> {
  const openpgp = await loadOpenpgp();
  const message = await openpgp.createMessage({ binary: document });
  return openpgp.sign({ message, signingKeys: privateKey, detached: true, format: 'binary' });
}

/** The key that will sign a release's SHA256SUMS, loaded only when the publish goes ahead. */
export interface Signer {
  keyId: string;
  /** Loads (or, in local mode, creates) the private key; may write the key file. */
  load(): Promise<LoadedKey>;
  /** What load() will do that a dry run does not. */
  pending?: string;
}

/**
 * The key that will sign SHA256SUMS: --key-file, EDGE_REGISTRY_SIGNING_KEY,
 * or (local mode only) .keys/HOST/NS.asc, generated when missing. With
 * --remote the key must already be one of the namespace's keys. Throws
 * InputError naming the fix when there is no key, or the key is not one of
 * `namespaceKeys` (a local namespace without keys adopts the first).
 */
export async function chooseSigner(
  address: ProviderAddress,
  config: RegistryConfig,
  namespaceKeys: SigningKey[],
  options: { keyFile?: string; remote?: boolean; keysDir?: string },
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<Signer> {
  // A key must be one of the namespace's keys, so a rotated-out key cannot
  // come back through a stale CI secret. Only a local namespace without any
  // key yet adopts the first key it is given.
  const requireRegistered = (key: LoadedKey) => {
    if (namespaceKeys.some((k) => k.key_id === key.publicKey.key_id)) return;
    if (!options.remote && namespaceKeys.length === 0) return;
    throw new InputError(
      `${key.source}: key ${key.publicKey.key_id} is not a signing key of namespace ${address.namespace} (it has ${namespaceKeys.map((k) => k.key_id).join(', ') || 'none'}); ` +
        `register it first with npm run keys -- import --namespace ${address.namespace}${options.remote ? ' --remote' : ''} --key-file PUBLIC_OR_PRIVATE_KEY_FILE, or sign with a registered key`,
    );
  };
  const explicit = await explicitPrivateKey({ keyFile: options.keyFile, env });
  if (explicit) {
    requireRegistered(explicit);
    return { keyId: explicit.publicKey.key_id, load: async () => explicit };
  }
  if (options.remote) {
    throw new InputError(
      `no signing key: pass --key-file PATH or set ${KEY_ENV} (and ${PASSPHRASE_ENV} if it is encrypted); create one with npm run keys -- generate --namespace ${address.namespace}`,
    );
  }
  const keysDir = options.keysDir ?? join(config.projectRoot, '.keys');
  const path = localKeyPath(keysDir, address.hostname, address.namespace);
  if (existsSync(path)) {
    const key = await loadPrivateKey(readFileSync(path, 'utf8'), path, env[PASSPHRASE_ENV] || undefined);
    requireRegistered(key);
    return { keyId: key.publicKey.key_id, load: async () => key };
  }
  if (namespaceKeys.length > 0) {
    throw new InputError(
      `no private key for namespace ${address.namespace} (its keys: ${namespaceKeys.map((k) => k.key_id).join(', ')}): pass --key-file PATH or set ${KEY_ENV}; ` +
        `${path} does not exist`,
    );
  }
  return {
    keyId: '(new key)',
    pending: `would generate a local signing key into ${path}`,
    load: async () => {
      const generated = await generateSigningKey({ name: `edge-registry ${address.hostname}/${address.namespace} (local)` });
      writePrivateKeyFile(path, generated.armoredPrivateKey);
      log(
        `warning: no signing key for namespace ${address.namespace}: generated RSA-4096 key ${generated.publicKey.key_id} into ${path} (git-ignored; local mode only — use npm run keys for real keys)`,
      );
      return loadPrivateKey(generated.armoredPrivateKey, path);
    },
  };
}

/**
 * The local publish's signature made ahead, while the local runtime starts (the CLI waits for it then):
 * the key chooseSigner tries first when it is at hand without the store (--key-file,
 * EDGE_REGISTRY_SIGNING_KEY, else an existing .keys/HOST/NS.asc) loaded, and `document` signed with it.
 * Resolves null when there is no such key or it does not load (chooseSigner meets it again and reports
 * it); never rejects. The publish uses the signature only when chooseSigner chose the same key, so which
 * key signs and every refusal stay chooseSigner's.
 */
export async function signAhead(
  document: Uint8Array,
  address: ProviderAddress,
  config: RegistryConfig,
  options: { keyFile?: string; keysDir?: string },
  env: NodeJS.ProcessEnv,
): Promise<{ keyId: string; signature: Uint8Array } | null> {
  try {
    let key = await explicitPrivateKey({ keyFile: options.keyFile, env });
    if (!key) {
      const path = localKeyPath(options.keysDir ?? join(config.projectRoot, '.keys'), address.hostname, address.namespace);
      if (!existsSync(path)) return null;
      key = await loadPrivateKey(readFileSync(path, 'utf8'), path, env[PASSPHRASE_ENV] || undefined);
    }
    return { keyId: key.publicKey.key_id, signature: await signDetached(document, key.privateKey) };
  } catch {
    return null;
  }
}

/** openpgp is loaded when a key is used, not when the CLI starts (~60 ms of CPU a keyless publish does not need). */
const loadOpenpgp = () => import('openpgp');
