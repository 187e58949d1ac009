import { compareVersionsDescending } from './modules-order';
import { formatModuleAddress, moduleDownloadBody, moduleVersionsBody, type ModuleAddress } from '../protocol/modules-v1';
import { InputError } from '../protocol/errors';
import {
  moduleArchivePath, moduleCatalogKey, moduleDocsKey, moduleDownloadKey, moduleObjectKey, moduleRecordKey,
  moduleRecordPrefix, moduleRecordsOfHostPrefix, moduleVersionsKey, parseModuleRecordKey,
} from './layout';
import type { BlobStore, KvStore } from './types';
import { listAllKeys } from './list-keys';
import type { ModuleCatalog, ModuleDocs, ModuleVersionRecord } from './modules-types';

/**
 * The write side of the module store, used by `npm run publish-module`
 * (never by the Worker). The order keeps the registry consistent, as for
 * providers: the package in R2 first, then the version's immutable documents
 * (download location, docs), then its record, and last the module's version
 * list and the hostname's catalog, rebuilt from the records. A run killed at
 * any point leaves every list as it was; running it again completes it.
 */

export interface ModulePackage {
  sha256Hex: string;
  size: number;
  contentType: string;
  /** Opens the bytes; called only when the stored object is missing or differs. */
  open(): ReadableStream | Uint8Array;
}

export type ModuleProgress = (event: { step: 'upload' | 'skip-upload' | 'documents' | 'record' | 'index'; detail: string }) => void;

/** The stored record of a module version, or null when it was never (completely) published. */
export async function readModuleRecord(kv: KvStore, address: ModuleAddress, version: string): Promise<ModuleVersionRecord | null> {
  const text = await kv.get(moduleRecordKey(address, version), 'text');
  return text === null ? null : (JSON.parse(text) as ModuleVersionRecord);
}

/** True when two records are the same package bytes (a re-run). */
export function samePackage(a: ModuleVersionRecord, b: ModuleVersionRecord): boolean {
  return a.sha256 === b.sha256 && a.size === b.size && a.filename === b.filename;
}

/**
 * Publishes one module version. Already published with the same bytes:
 * rewrites nothing, completes the lists, returns 'unchanged'. Published with
 * other bytes: throws InputError (409) — versions are immutable.
 * `rebuildIndex: false` skips the list rebuild (a bulk import calls
 * rebuildModuleIndex once at the end).
 */
export async function publishModuleVersion(
  kv: KvStore, blobs: BlobStore, record: ModuleVersionRecord, docs: ModuleDocs, pkg: ModulePackage,
  progress: ModuleProgress = () => {},
  options: { rebuildIndex?: boolean } = {},
): Promise<'published' | 'unchanged'> {
  const rebuild = options.rebuildIndex ?? true;
  const { address, version } = record;
  const existing = await readModuleRecord(kv, address, version);
  if (existing) {
    if (!samePackage(existing, record)) {
      throw new InputError(
        `${formatModuleAddress(address)} ${version} is already published with different contents (SHA-256 ${existing.sha256}, this package ${record.sha256}); published versions are immutable — publish a new version instead`,
        409,
      );
    }
    if (rebuild) await rebuildModuleIndex(kv, address, progress);
    return 'unchanged';
  }

  const key = moduleObjectKey(address, version, record.filename);
  const head = await blobs.head(key);
  if (head && head.size === pkg.size && head.customMetadata?.sha256 === pkg.sha256Hex) {
    progress({ step: 'skip-upload', detail: record.filename });
  } else {
    progress({ step: 'upload', detail: `${record.filename} (${(pkg.size / 1e6).toFixed(2)} MB)` });
    await blobs.put(key, pkg.open(), { httpMetadata: { contentType: pkg.contentType }, customMetadata: { sha256: pkg.sha256Hex } });
  }

  progress({ step: 'documents', detail: 'download location and docs' });
  await kv.put(moduleDownloadKey(address, version), JSON.stringify(moduleDownloadBody(moduleArchivePath(address, version, record.filename))));
  await kv.put(moduleDocsKey(address, version), JSON.stringify(docs));

  progress({ step: 'record', detail: version });
  await kv.put(moduleRecordKey(address, version), JSON.stringify(record));

  if (rebuild) await rebuildModuleIndex(kv, address, progress);
  return 'published';
}

/**
 * Rewrites the module's version list and the hostname's catalog from the
 * stored records (key names only: the version is in the key). KV has no
 * compare-and-swap, so it re-reads after writing and repeats until what it
 * wrote matches the records: of two concurrent publishers the last writer
 * has seen both. Writes nothing when both are current.
 */
export async function rebuildModuleIndex(kv: KvStore, address: ModuleAddress, progress: ModuleProgress = () => {}): Promise<void> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const versions = (await listAllKeys(kv, moduleRecordPrefix(address)))
      .map((key) => key.slice(moduleRecordPrefix(address).length))
      .sort(compareVersionsDescending);
    const body = JSON.stringify(moduleVersionsBody(versions));
    const catalog = JSON.stringify(await buildCatalog(kv, address.hostname));
    const [storedBody, storedCatalog] = await Promise.all([
      kv.get(moduleVersionsKey(address), 'text'),
      kv.get(moduleCatalogKey(address.hostname), 'text'),
    ]);
    if (storedBody === body && storedCatalog === catalog) return;
    progress({ step: 'index', detail: `${versions.length} versions of ${formatModuleAddress(address)}` });
    if (storedBody !== body) await kv.put(moduleVersionsKey(address), body);
    if (storedCatalog !== catalog) await kv.put(moduleCatalogKey(address.hostname), catalog);
  }
  throw new Error(`the version list of ${formatModuleAddress(address)} kept changing while being rebuilt; run the publish again`);
}

async function buildCatalog(kv: KvStore, hostname: string): Promise<ModuleCatalog> {
  const modules = new Map<string, ModuleCatalog['modules'][number]>();
  for (const key of await listAllKeys(kv, moduleRecordsOfHostPrefix(hostname))) {
    const parsed = parseModuleRecordKey(key);
    if (!parsed) continue;
    const { namespace, name, system } = parsed.address;
    const id = `${namespace}/${name}/${system}`;
    const entry = modules.get(id) ?? { namespace, name, system, versions: [] };
    entry.versions.push(parsed.version);
    modules.set(id, entry);
  }
  const list = [...modules.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, m]) => ({
    ...m,
    versions: m.versions.sort(compareVersionsDescending),
  }));
  return { modules: list };
}
