import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import { InputError, parseHostname } from '../../src/protocol/index';
import { parsePublicDocuments, type PublicDocuments, type PublicDocumentsVars } from '../../src/store/static-documents';

/**
 * What the scripts need from wrangler.toml, read with wrangler's own config
 * reader (so environments, inheritance and defaults behave as in
 * `wrangler dev` / `wrangler deploy`).
 */
export interface RegistryConfig {
  /** Absolute path of the wrangler.toml read. */
  configPath: string;
  /** Directory of wrangler.toml: where .wrangler/ and .keys/ live. */
  projectRoot: string;
  /** REGISTRY_HOSTNAME of the selected environment. */
  hostname: string;
  /** The REGISTRY_KV namespace id (`wrangler dev` also names its local namespace by it). */
  kvNamespaceId: string;
  /** The REGISTRY_R2 bucket name. */
  bucketName: string;
  /** Persist root `wrangler dev` uses for local state: <root>/.wrangler/state/v3 (or --persist-to DIR/v3). */
  localPersistRoot: string;
  /** wrangler.toml's compatibility_date: the local runtime the scripts start runs with it, as `wrangler dev` does. */
  compatibilityDate: string;
  /** PUBLIC_DOCUMENTS=r2 of the selected environment (src/store/static-documents.ts): the store's writes also write the static copies. Absent or null: off. */
  publicDocuments?: PublicDocuments | null;
  /** The string `[vars]` of the selected environment (the local publish serves the registry Worker with them, as `npm start` does). */
  vars?: Record<string, string>;
}

export interface ConfigOptions {
  /** Path to wrangler.toml; default ./wrangler.toml. */
  configPath?: string;
  /** wrangler environment (`--env production`); default the top level. */
  env?: string;
  /** Like `wrangler dev --persist-to DIR`: local state root (state goes to DIR/v3). */
  persistTo?: string;
}

/**
 * Reads the registry's bindings from wrangler.toml. Throws InputError when
 * the file is missing or lacks the REGISTRY_KV / REGISTRY_R2 bindings or the
 * REGISTRY_HOSTNAME variable, or its PUBLIC_DOCUMENTS setting is broken.
 */
export async function readRegistryConfig(options: ConfigOptions = {}): Promise<RegistryConfig> {
  const configPath = resolve(options.configPath ?? 'wrangler.toml');
  if (!existsSync(configPath)) {
    throw new InputError(`${configPath} not found: run from the project root or pass --config PATH/wrangler.toml`);
  }
  const config = await readWranglerBindings(configPath, options.env);
  const where = `${configPath}${options.env ? ` (env ${options.env})` : ''}`;
  const kv = config.kv_namespaces.find((ns: { binding: string; id?: string }) => ns.binding === 'REGISTRY_KV');
  if (!kv?.id) throw new InputError(`${where}: no kv_namespaces entry with binding "REGISTRY_KV" and an id`);
  const r2 = config.r2_buckets.find((bucket: { binding: string; bucket_name?: string }) => bucket.binding === 'REGISTRY_R2');
  if (!r2?.bucket_name) throw new InputError(`${where}: no r2_buckets entry with binding "REGISTRY_R2" and a bucket_name`);
  const vars = config.vars as Record<string, unknown>;
  const hostname = vars.REGISTRY_HOSTNAME;
  if (typeof hostname !== 'string') throw new InputError(`${where}: [vars] REGISTRY_HOSTNAME is not set`);
  const projectRoot = dirname(configPath);
  let publicDocuments: PublicDocuments | null;
  try {
    publicDocuments = parsePublicDocuments(vars as PublicDocumentsVars);
  } catch (error) {
    throw new InputError(`${where}: ${(error as Error).message}`);
  }
  return {
    publicDocuments,
    configPath,
    projectRoot,
    hostname: parseHostname(hostname),
    kvNamespaceId: kv.id,
    bucketName: r2.bucket_name,
    localPersistRoot: join(resolve(options.persistTo ?? join(projectRoot, '.wrangler', 'state')), 'v3'),
    compatibilityDate: config.compatibility_date ?? compatibilityDate(configPath),
    vars: Object.fromEntries(Object.entries(vars).filter((entry): entry is [string, string] => typeof entry[1] === 'string')),
  };
}

/**
 * The string variables (`[vars]`, or `[env.ENV.vars]`) of the wrangler.toml at
 * `configPath` as wrangler resolves them (cached like readRegistryConfig's
 * read). Throws InputError when the file is missing.
 */
export async function readWranglerVars(configPath: string, env?: string): Promise<Record<string, string>> {
  if (!existsSync(configPath)) throw new InputError(`${configPath} not found: run from the project root or pass --config PATH/wrangler.toml`);
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries((await readWranglerBindings(configPath, env)).vars ?? {})) {
    if (typeof value === 'string') vars[name] = value;
  }
  return vars;
}

/**
 * wrangler.toml's top-level compatibility_date, read synchronously (for the
 * bench and tests that start workerd themselves). Throws InputError when the
 * file has none.
 */
export function compatibilityDate(configPath = join(dirname(import.meta.dirname), '..', 'wrangler.toml')): string {
  const match = /^compatibility_date\s*=\s*"(\d{4}-\d{2}-\d{2})"/m.exec(readFileSync(configPath, 'utf8'));
  if (!match) throw new InputError(`${configPath}: no compatibility_date = "YYYY-MM-DD"`);
  return match[1]!;
}

/** The parts of wrangler's resolved config readRegistryConfig uses. */
interface WranglerBindings {
  kv_namespaces: { binding: string; id?: string }[];
  r2_buckets: { binding: string; bucket_name?: string }[];
  vars: Record<string, unknown>;
  compatibility_date?: string;
}

/**
 * wrangler.toml as wrangler itself resolves it (environments, inheritance),
 * reduced to WranglerBindings. Loading wrangler costs ~0.9 s of CPU, paid by
 * every command, so the result is kept in node_modules/.cache/edge-registry
 * under a key made of the file's bytes, the environment and the installed
 * wrangler: any edit of wrangler.toml, or another wrangler, reads it afresh.
 * A cache that can't be read or written only means reading with wrangler.
 */
async function readWranglerBindings(configPath: string, env: string | undefined): Promise<WranglerBindings> {
  let cachePath: string | null = null;
  try {
    const wranglerEntry = createRequire(import.meta.url).resolve('wrangler');
    const installed = statSync(wranglerEntry);
    const key = createHash('sha256')
      .update(readFileSync(configPath))
      .update(`\0${env ?? ''}\0${wranglerEntry}\0${installed.size}\0${installed.mtimeMs}`)
      .digest('hex')
      .slice(0, 32);
    const modules = wranglerEntry.lastIndexOf(`${sep}node_modules${sep}`);
    if (modules >= 0) cachePath = join(wranglerEntry.slice(0, modules), 'node_modules', '.cache', 'edge-registry', `wrangler-config-${key}.json`);
    if (cachePath && existsSync(cachePath)) return JSON.parse(readFileSync(cachePath, 'utf8')) as WranglerBindings;
  } catch {
    cachePath = null;
  }
  // require, not import(): wrangler is CommonJS, and import() has Node scan it first (0.9–1.2 s against 0.7 s).
  const { unstable_readConfig } = createRequire(import.meta.url)('wrangler') as typeof import('wrangler');
  const config = unstable_readConfig({ config: configPath, env }, { hideWarnings: true });
  const bindings: WranglerBindings = {
    kv_namespaces: config.kv_namespaces.map(({ binding, id }: { binding: string; id?: string }) => ({ binding, id })),
    r2_buckets: config.r2_buckets.map(({ binding, bucket_name }: { binding: string; bucket_name?: string }) => ({ binding, bucket_name })),
    vars: config.vars as Record<string, unknown>,
    ...(config.compatibility_date ? { compatibility_date: config.compatibility_date } : {}),
  };
  if (cachePath) {
    try {
      mkdirSync(dirname(cachePath), { recursive: true });
      // Whole or not at all: written under another name, then renamed.
      const temp = `${cachePath}.${process.pid}`;
      writeFileSync(temp, JSON.stringify(bindings));
      renameSync(temp, cachePath);
    } catch {
      // read-only node_modules: read with wrangler next time too
    }
  }
  return bindings;
}
