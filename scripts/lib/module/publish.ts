import { readFileSync, statSync } from 'node:fs';
import { cliAttester } from '../provenance';
import { checkProvenancePolicy } from '../../../src/store/provenance';
import { InputError, parseHostname, parseVersion, sha256Hex } from '../../../src/protocol/index';
import { formatModuleAddress, moduleAddress, type ModuleArchiveFormat } from '../../../src/protocol/modules-v1';
import { moduleArchiveFilename, moduleLeaseName } from '../../../src/store/layout';
import { withLease } from '../../../src/store/lease';
import { processLeaseOptions } from '../stores/lease';
import { differentPackageError, readModuleRecord, samePackage } from '../../../src/store/modules/record';
import { publishModuleVersion } from '../../../src/store/modules/write';
import { CRASH_ENV, KILL_ENV, progressLog } from '../progress';
import type { ModuleDocs, ModuleVersionRecord } from '../../../src/store/modules/types';
import { moduleVersionFields } from '../../../src/store/modules/result';
import { readRegistryConfig, type RegistryConfig } from '../config';
import { openLocalStore } from '../stores/local';
import { type StoreHandle } from '../stores/handle';
import { openRemoteStore } from '../stores/remote';
import type { R2S3Options } from '../stores/r2-s3';
import { isDocFile } from '../../../src/protocol/module-package';
import { readSuppliedPackage } from './archive';
import { extractModuleDocs } from './docs';
import { formatMB, packModule } from './pack';
import { audited } from '../audit';
import { publishModuleToRegistry, registryHostname } from './publish-registry';

/**
 * publishModule: the function behind `npm run publish-module`. Everything is
 * checked before anything is written — names, strict semver, the package
 * (a directory packed deterministically, or a supplied .tar.gz/.zip
 * validated), its size, its docs (every .tf parses), and the version's state
 * in the store (same bytes → `unchanged`; other bytes → refused, 409). Then
 * src/store/modules/write.ts writes package, documents, record, lists.
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
  /** An already-open store (not closed here), with its config. */
  store?: StoreHandle;
  config?: RegistryConfig;
  remoteTuning?: Pick<R2S3Options, 'multipartThreshold' | 'partSize' | 'region' | 'onProgress'>;
}

/** What `--json` prints. */
export interface PublishModuleResult {
  /** hostname/namespace/name/system */
  address: string;
  version: string;
  filename: string;
  format: ModuleArchiveFormat;
  sha256: string;
  size: number;
  /** Files in the package. */
  files: number;
  inputs: number;
  outputs: number;
  submodules: string[];
  readme: boolean;
  /**
   * published: written now; unchanged: already published with these bytes and verified whole (package object, documents,
   * lists); repaired: already published, parts missing after an interrupted publish rewritten; dry-run: nothing written.
   */
  status: 'published' | 'unchanged' | 'repaired' | 'dry-run';
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
  if (options.registry !== undefined && options.remote)
    throw new InputError("--registry publishes through the registry's API; --remote writes Cloudflare storage directly: use one");
  // --registry needs no wrangler.toml: the registry names itself (its hostname is in the URL).
  const config =
    options.registry !== undefined
      ? null
      : (options.config ?? (await readRegistryConfig({ configPath: options.configPath, env: options.env, persistTo: options.persistTo })));
  const hostname = options.hostname ? parseHostname(options.hostname) : config ? config.hostname : registryHostname(options.registry!);
  const address = moduleAddress(hostname, options.namespace, options.name, options.system);
  const version = parseVersion(options.version);
  const label = `${formatModuleAddress(address)} ${version}`;

  const pkg = await readPackage(options.path, kind === 'directory', maxBytes, log);
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
  if (options.registry !== undefined) {
    const served = await publishModuleToRegistry(
      { registry: options.registry, address, version, format, bytes, sha256, docs, readme: pkg.readme, dryRun: options.dryRun },
      log,
      env,
    );
    return result(served.status);
  }
  return publishToStore(options, config!, { label, record, docs, bytes, env }, result);
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
 * Publishes a read package into the store (the options' open store, or the
 * local state or --remote opened and closed here), audited: the namespace's
 * provenance policy, the version's state (other bytes → VersionConflictError;
 * same bytes → verified and repaired), then publishModuleVersion under the
 * module's lease. A dry run reads and writes nothing but says what it would
 * do. Throws what those throw (InputError, VersionConflictError,
 * LeaseBusyError, infrastructure errors).
 */
async function publishToStore(
  options: PublishModuleOptions,
  storeConfig: RegistryConfig,
  v: ModuleToPublish,
  result: (status: PublishModuleResult['status']) => PublishModuleResult,
): Promise<PublishModuleResult> {
  const { label, env } = v;
  const log = options.log ?? (() => {});
  const store =
    options.store ??
    (options.remote
      ? openRemoteStore(storeConfig, env, {
          onProgress: (key, sent) => log(`  sent ${formatMB(sent)} of ${key.slice(key.lastIndexOf('/') + 1)}`),
          ...options.remoteTuning,
        })
      : await openLocalStore(storeConfig));
  try {
    // Every publish that reaches the store leaves an audit entry (a dry run none).
    return await audited(
      options.dryRun ? null : store,
      options.remote,
      { action: 'module.publish', target: label },
      async () => result(await publishOrPlan(store, storeConfig, options, v)),
      (r) =>
        r.status === 'dry-run'
          ? null
          : {
              outcome: r.status === 'unchanged' ? 'unchanged' : 'ok',
              ...(r.status === 'repaired' ? { reason: 'repaired what an interrupted publish left missing' } : {}),
              digests: { [r.filename]: r.sha256 },
            },
    );
  } finally {
    if (!options.store) await store.close();
  }
}

/** A validated module version ready to publish: its record, docs and bytes, `label` for messages, `env` for the store. */
interface ModuleToPublish {
  label: string;
  record: ModuleVersionRecord;
  docs: ModuleDocs;
  bytes: Uint8Array;
  env: NodeJS.ProcessEnv;
}

/**
 * Inside the audit: the namespace's provenance policy (a namespace requiring
 * build provenance refuses the CLI before anything is written), the
 * version's state (other bytes → VersionConflictError), then, unless a dry
 * run, publishModuleVersion under the module's lease. Returns the status.
 */
async function publishOrPlan(
  store: StoreHandle,
  storeConfig: RegistryConfig,
  options: PublishModuleOptions,
  v: ModuleToPublish,
): Promise<PublishModuleResult['status']> {
  const { label, record, docs, bytes, env } = v;
  const { address, version, format, sha256 } = record;
  const log = options.log ?? (() => {});
  const attest = cliAttester(storeConfig, options.remote, store.blobs, env);
  await checkProvenancePolicy(store.blobs, address.hostname, address.namespace, attest);
  const existing = await readModuleRecord(store, address, version);
  if (existing && !samePackage(existing, record)) throw differentPackageError(record, existing);
  if (options.dryRun) {
    log(
      existing
        ? `dry run: ${label} is already published with these bytes`
        : `dry run: would publish ${label} to ${store.description} as ${record.filename} (${formatMB(record.size)}, sha256 ${sha256})`,
    );
    return 'dry-run';
  }
  log(existing ? `${label} is already published with these bytes; verifying what is stored` : `publishing ${label} to ${store.description}`);
  // One writer per module: the publish (its own check of the record, verification and repair included) holds the module's lease.
  const outcome = await withLease(store.blobs, moduleLeaseName(address), processLeaseOptions(`publish-module ${label}`, log), (lease) =>
    publishModuleVersion(
      store,
      record,
      docs,
      {
        sha256Hex: sha256,
        size: bytes.byteLength,
        contentType: format === 'zip' ? 'application/zip' : 'application/gzip',
        open: () => bytes,
      },
      progressLog(log, env[CRASH_ENV], env[KILL_ENV]),
      { lease, attest },
    ),
  );
  log(
    outcome === 'published'
      ? `published ${label}`
      : outcome === 'repaired'
        ? `${label} was already published; repaired what an interrupted publish left missing`
        : `${label} was already published; verified, nothing rewritten`,
  );
  return outcome;
}
