import type { ModulePublishResult } from '../../../src/protocol/publish-api';
import { readFileSync, statSync } from 'node:fs';
import { InputError, parseHostname, parseVersion, sha256Hex } from '../../../src/protocol/index';
import { formatModuleAddress, moduleAddress, type ModuleArchiveFormat } from '../../../src/protocol/modules-v1';
import { moduleArchiveFilename, moduleLeaseName } from '../../../src/store/layout';
import type { ModuleDocs, ModuleVersionRecord } from '../../../src/store/modules/types';
import { moduleVersionFields } from '../../../src/store/modules/result';
import { readRegistryConfig, type RegistryConfig } from '../config';
import { type StoreHandle } from '../stores/handle';
import { isDocFile } from '../../../src/protocol/module-package';
import { readSuppliedPackage } from './archive';
import { extractModuleDocs } from './docs';
import { formatMB, packModule } from './pack';
import { publishModuleToRegistry, registryHostname, sendModule } from './publish-registry';
import { remotePublishRefusal, startLocalRegistry, withLocalPublish, type LocalRegistry } from '../stores/local-publish';

/**
 * publishModule: the function behind `npm run publish-module`. Everything is
 * checked before anything is written — names, strict semver, the package
 * (a directory packed deterministically, or a supplied .tar.gz/.zip
 * validated), its size, its docs (every .tf parses), and the version's state
 * in the store (same bytes → `unchanged`; other bytes → refused, 409). Then
 * the registry Worker's publish API writes package, documents, record, lists:
 * served on the local state (its runtime starting while the package is packed,
 * when the state exists), or --registry's.
 */

export const DEFAULT_MAX_MB = 100;

export interface PublishModuleOptions {
  /** A module directory, or a .tar.gz/.tgz/.zip package. */
  path: string;
  namespace: string;
  name: string;
  system: string;
  version: string;
  /** Size limit of the package in MB (default 100). */
  maxMB?: number;
  /** Refused: modules reach a deployed registry through its publish API (`registry`) only. */
  remote?: boolean;
  env?: string;
  configPath?: string;
  persistTo?: string;
  hostname?: string;
  dryRun?: boolean;
  log?: (line: string) => void;
  processEnv?: NodeJS.ProcessEnv;
  /** Publish through this registry's publish API (URL) instead of writing storage: EDGE_REGISTRY_TOKEN or a CI OIDC token. */
  registry?: string;
  /** An already-open local store (opened with its registry to be used; not closed here), with its config. */
  store?: StoreHandle;
  config?: RegistryConfig;
}

/**
 * What `--json` prints: the publish API's result (status — published: written now; unchanged: already published with
 * these bytes and verified whole; repaired: already published, parts missing after an interrupted publish rewritten;
 * dry-run: nothing written) and what the CLI read from the package.
 */
export interface PublishModuleResult extends ModulePublishResult {
  /** Files in the package. */
  files: number;
  inputs: number;
  outputs: number;
  submodules: string[];
  readme: boolean;
}

/**
 * Validates and publishes one module version. Throws InputError for what the
 * caller can fix, VersionConflictError for a version published with other
 * bytes, LeaseBusyError when another publish holds the module (all exit 1 in
 * the CLI), other errors for infrastructure failures; nothing is written
 * when validation fails.
 */
export async function publishModule(options: PublishModuleOptions): Promise<PublishModuleResult> {
  const log = options.log ?? (() => {});
  const maxMB = options.maxMB ?? DEFAULT_MAX_MB;
  if (!Number.isFinite(maxMB) || maxMB <= 0) throw new InputError(`--max-size must be a positive number of MB, not ${options.maxMB}`);
  const maxBytes = Math.floor(maxMB * 1e6);
  // The package first: a wrong path is the problem to name before a malformed name or version.
  let kind: string;
  try {
    kind = statSync(options.path).isDirectory() ? 'directory' : 'file';
  } catch {
    throw new InputError(`${options.path}: no such file or directory; give the module's directory or a .tar.gz/.zip package`);
  }
  if (options.remote) throw remotePublishRefusal('publish-module', `${options.namespace}/${options.name}/${options.system}`);
  // --registry needs no wrangler.toml: the registry names itself (its hostname is in the URL).
  const config =
    options.registry !== undefined
      ? null
      : (options.config ?? (await readRegistryConfig({ configPath: options.configPath, env: options.env, persistTo: options.persistTo })));
  const hostname = options.hostname ? parseHostname(options.hostname) : config ? config.hostname : registryHostname(options.registry!);
  const address = moduleAddress(hostname, options.namespace, options.name, options.system);
  const version = parseVersion(options.version);
  const label = `${formatModuleAddress(address)} ${version}`;

  // The local registry starts while the package is packed and its docs read (stores/local-publish.ts).
  const registry = config ? startLocalRegistry(config, hostname, options.store, true) : null;
  let pkg: ModulePackage;
  try {
    pkg = await readPackage(options.path, kind === 'directory', maxBytes, log);
  } catch (error) {
    await registry?.close();
    throw error;
  }
  try {
    return await publishPackage(options, pkg, { address, version, label, log, registry: registry?.get() ?? null });
  } finally {
    await registry?.close(); // withLocalPublish closes it too; closing twice is nothing
  }
}

/** publishModule's second half, once the package is read: its record, then the local registry's API (`registry`) or --registry's. */
async function publishPackage(
  options: PublishModuleOptions,
  pkg: ModulePackage,
  o: { address: ModuleVersionRecord['address']; version: string; label: string; log: (line: string) => void; registry: LocalRegistry | null },
): Promise<PublishModuleResult> {
  const { address, version, label, log, registry } = o;
  const { bytes, format, docs } = pkg;
  const sha256 = sha256Hex(bytes);
  const record: ModuleVersionRecord = {
    address,
    version,
    filename: moduleArchiveFilename(address, version, format),
    format,
    sha256,
    size: bytes.byteLength,
    publishedAt: new Date().toISOString(),
  };
  const result = (status: PublishModuleResult['status']) => resultOf(record, pkg, status);
  log(
    `docs: ${docs.inputs.length} inputs, ${docs.outputs.length} outputs, ${docs.providers.length} required providers, ${docs.submodules.length} submodules${docs.readmeHtml === null ? ', no README.md' : ', README.md'}`,
  );

  const env = options.processEnv ?? process.env;
  if (registry) return publishLocally(options, registry, { label, record, docs, bytes, env }, pkg, result);
  const served = await publishModuleToRegistry(
    { registry: options.registry!, address, version, format, bytes, sha256, docs, readme: pkg.readme, dryRun: options.dryRun },
    log,
    env,
  );
  return result(served.status);
}

/** What `--json` prints for `record` published from `pkg` with `status`. */
function resultOf(record: ModuleVersionRecord, pkg: ModulePackage, status: PublishModuleResult['status']): PublishModuleResult {
  const { docs } = pkg;
  return {
    ...moduleVersionFields(record),
    files: pkg.fileCount,
    inputs: docs.inputs.length,
    outputs: docs.outputs.length,
    submodules: docs.submodules.map((s) => s.path),
    readme: docs.readmeHtml !== null,
    status,
  };
}

/** A module package read for publishing: its bytes, docs and README. */
interface ModulePackage {
  bytes: Uint8Array;
  format: ModuleArchiveFormat;
  /** Files in the package. */
  fileCount: number;
  docs: ModuleDocs;
  /** README.md's text, when the package has one. */
  readme: string | null;
}

/**
 * The package of `path`: a directory packed deterministically (packModule,
 * tar.gz), or a supplied .tar.gz/.zip validated and published as is
 * (readSuppliedPackage); its docs extracted (every .tf parses). Logs what it
 * did. Throws InputError (from packing, validation or the docs) for what the
 * publisher can fix, naming the file; nothing is written.
 */
async function readPackage(path: string, isDirectory: boolean, maxBytes: number, log: (line: string) => void): Promise<ModulePackage> {
  if (!isDirectory) {
    const supplied = await readSuppliedPackage(path, maxBytes);
    log(`${path}: ${supplied.files.length} files, ${formatMB(supplied.bytes.byteLength)}, validated; published as is`);
    return {
      bytes: supplied.bytes,
      format: supplied.format,
      fileCount: supplied.files.length,
      docs: await extractModuleDocs(supplied.docFiles),
      readme: supplied.docFiles.get('README.md') ?? null,
    };
  }
  const started = Date.now();
  const packed = await packModule(path, maxBytes);
  log(`packed ${path}: ${packed.files.length} files, ${formatMB(packed.unpackedSize)} → ${formatMB(packed.bytes.byteLength)} in ${Date.now() - started} ms`);
  if (packed.excluded.length > 0)
    log(`  left out: ${packed.excluded.slice(0, 10).join(', ')}${packed.excluded.length > 10 ? `, … (${packed.excluded.length})` : ''}`);
  const docFiles = new Map<string, string>();
  for (const file of packed.files) {
    if (isDocFile(file.path)) docFiles.set(file.path, readFileSync(file.source).toString('utf8'));
  }
  return {
    bytes: packed.bytes,
    format: 'tar.gz',
    fileCount: packed.files.length,
    docs: await extractModuleDocs(docFiles),
    readme: docFiles.get('README.md') ?? null,
  };
}

/**
 * The local publish: through the registry Worker served on the local state (stores/local-publish.ts),
 * with a publish token for exactly this module. The Worker checks the package again, refuses other
 * bytes (409), verifies and repairs a stored version, and writes under the module's lease; this prints
 * the lines the local publish always printed. Throws what the client throws (InputError for a refusal).
 */
async function publishLocally(
  options: PublishModuleOptions,
  registry: LocalRegistry,
  v: ModuleToPublish,
  pkg: ModulePackage,
  result: (status: PublishModuleResult['status']) => PublishModuleResult,
): Promise<PublishModuleResult> {
  const { label, record, env } = v;
  const log = options.log ?? (() => {});
  const { address, version, format, sha256 } = record;
  const { namespace, name, system } = address;
  return withLocalPublish(
    {
      registry,
      pkg: `${namespace}/${name}/${system}`,
      command: 'publish-module',
      lease: moduleLeaseName(address),
      env,
      log,
    },
    async ({ store, client }) => {
      if (!options.dryRun) log(`publishing ${label} to ${store.description}`);
      const served = await sendModule(await client, {
        address,
        version,
        format,
        bytes: v.bytes,
        sha256,
        docs: v.docs,
        readme: pkg.readme,
        dryRun: options.dryRun,
      });
      log(
        {
          'dry-run': `dry run: would publish ${label} to ${store.description} as ${record.filename} (${formatMB(record.size)}, sha256 ${sha256})`,
          published: `published ${label}`,
          repaired: `${label} was already published; repaired what an interrupted publish left missing`,
          unchanged: `${label} was already published; verified, nothing rewritten`,
        }[served.status],
      );
      return result(served.status);
    },
  );
}

/** A validated module version ready to publish: its record, docs and bytes, `label` for messages, `env` for the credentials. */
interface ModuleToPublish {
  label: string;
  record: ModuleVersionRecord;
  docs: ModuleDocs;
  bytes: Uint8Array;
  env: NodeJS.ProcessEnv;
}
