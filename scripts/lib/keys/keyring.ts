import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { basename, dirname, join, resolve } from 'node:path';
import type * as openpgp from 'openpgp';
import { InputError } from '../../../src/protocol/index';
import type { SigningKey } from '../../../src/store/types';

/**
 * OpenPGP signing keys: generating, loading private keys, and the public
 * form the registry serves. Private keys come from a file or from
 * EDGE_REGISTRY_SIGNING_KEY (+ _PASSPHRASE); their text is never printed or
 * put in an error message.
 */

export const KEY_ENV = 'EDGE_REGISTRY_SIGNING_KEY';
export const PASSPHRASE_ENV = 'EDGE_REGISTRY_SIGNING_KEY_PASSPHRASE';

export type KeyType = 'rsa' | 'ecc';

/** A decrypted private key ready to sign, with its served public form. */
export interface LoadedKey {
  privateKey: openpgp.PrivateKey;
  publicKey: SigningKey;
  /** Where it came from, for messages ("file .keys/…", "EDGE_REGISTRY_SIGNING_KEY"). */
  source: string;
}

/** The served key id: the 16 upper-case hex digits of the (primary) key's ID. */
export function keyId(key: openpgp.Key): string {
  return key.getKeyID().toHex().toUpperCase();
}

/** The public key as served in signing_keys.gpg_public_keys. */
export function toSigningKey(key: openpgp.Key): SigningKey {
  return { key_id: keyId(key), ascii_armor: key.toPublic().armor() };
}

/**
 * Generates an OpenPGP v4 key that GnuPG 2.2 and every Terraform release
 * accept: RSA-4096 by default, or ed25519 (legacy EdDSA) with a cv25519
 * encryption subkey for `ecc`. The private key is armored, encrypted when a
 * passphrase is given.
 */
export async function generateSigningKey(options: {
  type?: KeyType;
  name: string;
  passphrase?: string;
}): Promise<{ armoredPrivateKey: string; publicKey: SigningKey }> {
  const openpgp = await loadOpenpgp();
  const common = {
    userIDs: [{ name: options.name }],
    format: 'object' as const,
    config: { v6Keys: false },
    ...(options.passphrase ? { passphrase: options.passphrase } : {}),
  };
  const { privateKey } =
    options.type === 'ecc'
      ? await openpgp.generateKey({ ...common, type: 'ecc', curve: 'ed25519Legacy' })
      : await openpgp.generateKey({ ...common, type: 'rsa', rsaBits: 4096 });
  return { armoredPrivateKey: privateKey.armor(), publicKey: toSigningKey(privateKey) };
}

/**
 * Reads an armored private key and decrypts it with `passphrase` when it is
 * encrypted. Throws InputError naming `source` (never the key text) when it
 * is not a private key, or encrypted without (the right) passphrase.
 */
export async function loadPrivateKey(armored: string, source: string, passphrase?: string): Promise<LoadedKey> {
  const openpgp = await loadOpenpgp();
  let key: openpgp.PrivateKey;
  try {
    key = await openpgp.readPrivateKey({ armoredKey: armored });
  } catch (error) {
    throw new InputError(
      `${source}: not an armored OpenPGP private key (${redact(error)}); export one with \`gpg --armor --export-secret-keys ID\` or run \`npm run keys -- generate\``,
    );
  }
  if (!key.isDecrypted()) {
    if (!passphrase) throw new InputError(`${source}: the private key is encrypted; set ${PASSPHRASE_ENV}`);
    try {
      key = await openpgp.decryptKey({ privateKey: key, passphrase });
    } catch {
      throw new InputError(`${source}: ${PASSPHRASE_ENV} does not decrypt the private key`);
    }
  }
  return { privateKey: key, publicKey: toSigningKey(key), source };
}

/**
 * Reads a public key (or the public part of a private key) from armored
 * text. Throws InputError naming `source` otherwise.
 */
export async function readPublicKey(armored: string, source: string): Promise<SigningKey> {
  const openpgp = await loadOpenpgp();
  try {
    const key = await openpgp.readKey({ armoredKey: armored });
    return toSigningKey(key);
  } catch (error) {
    throw new InputError(`${source}: not an armored OpenPGP key (${redact(error)}); export one with \`gpg --armor --export ID\``);
  }
}

/** Default private-key file of a namespace in local mode: KEYS_DIR/HOSTNAME/NAMESPACE.asc (git-ignored .keys/). */
export function localKeyPath(keysDir: string, hostname: string, namespace: string): string {
  return join(keysDir, hostname.replace(/:/g, '_'), `${namespace}.asc`);
}

/** Writes a private key file readable only by its owner; refuses to overwrite one. */
export function writePrivateKeyFile(path: string, armoredPrivateKey: string): void {
  if (existsSync(path)) throw new InputError(`${path} already exists; remove it first or pass another --key-file`);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, armoredPrivateKey, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
}

export interface KeySourceOptions {
  /** --key-file PATH. */
  keyFile?: string;
  /** Environment to read EDGE_REGISTRY_SIGNING_KEY(_PASSPHRASE) from; default process.env. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The private key given explicitly: --key-file, else EDGE_REGISTRY_SIGNING_KEY.
 * Null when neither is set. Throws InputError when the one given is unusable.
 */
export async function explicitPrivateKey(options: KeySourceOptions): Promise<LoadedKey | null> {
  const env = options.env ?? process.env;
  const passphrase = env[PASSPHRASE_ENV] || undefined;
  if (options.keyFile) {
    refuseTrackedFile(options.keyFile);
    let text: string;
    try {
      text = readFileSync(options.keyFile, 'utf8');
    } catch (error) {
      throw new InputError(`--key-file ${options.keyFile}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return loadPrivateKey(text, `--key-file ${options.keyFile}`, passphrase);
  }
  const fromEnv = env[KEY_ENV];
  if (fromEnv && fromEnv.trim() !== '') return loadPrivateKey(fromEnv, KEY_ENV, passphrase);
  return null;
}

/**
 * Throws InputError when `path` is a file tracked by git: private keys must
 * never be committed. (No git, or not in a work tree: nothing to check.)
 */
export function refuseTrackedFile(path: string): void {
  const check = spawnSync('git', ['ls-files', '--error-unmatch', '--', basename(path)], { cwd: dirname(resolve(path)), stdio: 'ignore' });
  if (check.status === 0) {
    throw new InputError(
      `${path} is tracked by git; a private key must never be in the repository — move it out, rotate the key (npm run keys -- generate, then remove the old one) and pass the new file`,
    );
  }
}

/** Describes a key for listings: algorithm and bits/curve, creation date, first user id. */
export async function describeKey(armored: string): Promise<{ algorithm: string; created: string; userId: string }> {
  const openpgp = await loadOpenpgp();
  const key = await openpgp.readKey({ armoredKey: armored });
  const info = key.getAlgorithmInfo() as { algorithm: string; bits?: number; curve?: string };
  return {
    algorithm: `${info.algorithm}${info.bits ? `-${info.bits}` : ''}${info.curve ? ` ${info.curve}` : ''}`,
    created: key.getCreationTime().toISOString(),
    userId: key.getUserIDs()[0] ?? '',
  };
}

// openpgp error messages can quote input; keep only the first line and cap it, and never include armor.
function redact(error: unknown): string {
  const message = String((error as Error)?.message ?? error).split('\n')[0] ?? '';
  return message.includes('BEGIN PGP') ? 'unreadable key' : message.slice(0, 120);
}

/** openpgp is loaded when a key is used, not when the CLI starts (~60 ms of CPU a keyless publish does not need). */
const loadOpenpgp = () => import('openpgp');
