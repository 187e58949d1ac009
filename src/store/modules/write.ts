import { putHotKey } from '../kv-write';
import { compareVersionsDescending } from '../../protocol/version';
import { formatModuleAddress, moduleDownloadBody, moduleVersionsBody, type ModuleAddress } from '../../protocol/modules-v1';
import {
  moduleArchivePath,
  moduleCatalogKey,
  moduleCommittedRecordKey,
  moduleCommittedRecordPrefix,
  moduleCommittedRecordsOfHostPrefix,
  moduleDocsKey,
  moduleDownloadKey,
  moduleStatementPrefix,
  moduleLifecycleKey,
  moduleObjectKey,
  moduleRecordKey,
  moduleRecordPrefix,
  moduleRecordsOfHostPrefix,
  moduleVersionsKey,
  parseModuleCommittedRecordKey,
  parseModuleRecordKey,
} from '../layout';
import type { Store } from '../store';
import { listAllKeys, listAllObjectKeys } from '../list';
import {
  commitRecord,
  parseStoredJson,
  readCommittedRecord,
  readRecordObjects,
  repairDocuments,
  storedAsRecorded,
  uploadUnlessStored,
  verifyObject,
  warnOnce,
  type PublishOutcome,
  type PublishProgress,
  type StoredFile,
} from '../records';
import type { ModuleCatalog, ModuleDocs, ModuleVersionRecord } from './types';
import { readLifecycle } from '../lifecycle/change';
import { withoutWithdrawnInCatalog, writeModuleLifecyclePage } from '../lifecycle/module-lists';
import { withoutWithdrawn } from '../lifecycle/state';
import { checkProvenancePolicy, storeStatement, type Attester } from '../provenance';
import { DamagedRecordError, ListRebuildRaceError, StoredReleaseMismatchError, VersionConflictError } from '../errors';

/**
 * The write side of the module store, used by `npm run publish-module` and by
 * the Worker's publish API (src/routes/publish/) and module proxy
 * (src/mirror/modules/proxy.ts). Callers hold the module's lease (moduleLeaseName).
 * The same machinery and order as providers (src/store/providers/write.ts,
 * src/store/records.ts):
 *
 *   1. a package of another format left by an uncommitted publish is removed;
 *   2. the package in R2;
 *   3. the version's immutable documents in KV (download location, docs);
 *   4. the record in R2 (`.module-records/…/VERSION.json`, created only if
 *      absent): the commit point;
 *   5. the record in KV (a copy, for readers of KV records);
 *   6. the module's version list and the hostname's catalog, rebuilt from
 *      the R2 records (strongly consistent; KV lists lag up to 60 s between
 *      locations), so concurrent publishes all end up listed.
 * A run killed at any point leaves every list as it was or whole; running it
 * again verifies what is stored against the record and repairs it.
 */

/**
 * Parses and validates a stored module version record. Throws
 * DamagedRecordError naming `key` when it is not JSON or lacks a field.
 */
export function parseModuleRecord(text: string, key: string): ModuleVersionRecord {
  const value = parseStoredJson(text, key);
  const r = value as Partial<ModuleVersionRecord> | null;
  const fail = (why: string): never => {
    throw new DamagedRecordError(key, why);
  };
  if (typeof r !== 'object' || r === null) return fail('not an object');
  if (typeof r.version !== 'string' || !r.version) fail('no version');
  const a = r.address as Partial<ModuleAddress> | undefined;
  if (!a || typeof a.hostname !== 'string' || typeof a.namespace !== 'string' || typeof a.name !== 'string' || typeof a.system !== 'string') fail('no address');
  if (typeof r.filename !== 'string' || !r.filename) fail('no file name');
  if (r.format !== 'tar.gz' && r.format !== 'zip') fail('no package format');
  if (typeof r.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(r.sha256)) fail('no SHA-256');
  if (typeof r.size !== 'number' || !Number.isInteger(r.size) || r.size < 0) fail('no size');
  return r as ModuleVersionRecord;
}

/**
 * The committed record of a module version, or null when it was never
 * (completely) published. Reads the R2 record (strongly consistent); a
 * version published before records were kept in R2 is found through its KV
 * record. Throws DamagedRecordError for a damaged record.
 */
export async function readModuleRecord(store: Store, address: ModuleAddress, version: string): Promise<ModuleVersionRecord | null> {
  return readCommittedRecord(store, moduleCommittedRecordKey(address, version), moduleRecordKey(address, version), parseModuleRecord);
}

/** True when two records are the same package bytes (a re-run). */
export function samePackage(a: ModuleVersionRecord, b: ModuleVersionRecord): boolean {
  return a.sha256 === b.sha256 && a.size === b.size && a.filename === b.filename;
}

/** The VersionConflictError for a module version published with another package. */
export function differentPackageError(record: ModuleVersionRecord, existing: ModuleVersionRecord): VersionConflictError {
  return new VersionConflictError(
    `${formatModuleAddress(record.address)} ${record.version} is already published with different contents (SHA-256 ${existing.sha256}, ${existing.filename}; this package ${record.sha256}, ${record.filename}); published versions are immutable — publish a new version instead`,
  );
}

/**
 * Publishes one module version; the caller holds the module's lease
 * (`options.lease` is checked before every write: LeaseLostError when lost).
 * Already committed with the same bytes: verifies the package object (size,
 * SHA-256), the documents, the KV record and the lists, rewrites what is
 * missing ('repaired') or nothing ('unchanged'), and throws
 * StoredReleaseMismatchError naming a stored package that differs and cannot
 * be restored. Committed with other bytes: throws VersionConflictError —
 * versions are immutable. ListRebuildRaceError when the lists kept changing.
 * `rebuildIndex: false` skips the list rebuild (a bulk import calls
 * rebuildModuleIndex once at the end).
 */
export async function publishModuleVersion(
  store: Store,
  record: ModuleVersionRecord,
  docs: ModuleDocs,
  pkg: StoredFile,
  progress: PublishProgress = () => {},
  options: { rebuildIndex?: boolean; lease?: { check(): void }; attest?: Attester } = {},
): Promise<PublishOutcome> {
  const { kv, blobs } = store;
  const rebuild = options.rebuildIndex ?? true;
  const check = () => options.lease?.check();
  const { address, version } = record;
  // The namespace's provenance policy before anything is read or written (src/store/provenance.ts).
  if (options.attest) await checkProvenancePolicy(blobs, address.hostname, address.namespace, options.attest);
  const existing = await readModuleRecord(store, address, version);
  if (existing) {
    if (!samePackage(existing, record)) throw differentPackageError(record, existing);
    const repairs = await verifyModuleVersion(store, existing, docs, pkg, progress, check);
    if (rebuild) await rebuildModuleIndex(store, address, progress, check);
    return repairs > 0 ? 'repaired' : 'unchanged';
  }

  // A publish of another format that died before its commit may have left its package.
  const prefix = moduleObjectKey(address, version, '');
  for (const key of await listAllObjectKeys(blobs, prefix)) {
    if (key === moduleObjectKey(address, version, record.filename)) continue;
    progress({ step: 'repair', detail: `removing ${key.slice(prefix.length)}, left by an interrupted publish of other bytes` });
    check();
    await blobs.delete(key);
  }

  await uploadUnlessStored(
    blobs,
    moduleObjectKey(address, version, record.filename),
    { ...pkg, filename: record.filename },
    progress,
    check,
    `${record.filename} (${(pkg.size / 1e6).toFixed(2)} MB)`,
  );

  progress({ step: 'documents', detail: 'download location and docs' });
  check();
  await kv.put(moduleDownloadKey(address, version), downloadBody(record));
  await kv.put(moduleDocsKey(address, version), JSON.stringify(docs));

  // The statement before the record (the commit point), which names it: both absent or both whole.
  const prepared = await options.attest?.sign([{ name: record.filename, digest: { sha256: record.sha256 } }], {
    address: formatModuleAddress(address),
    version,
  });
  if (prepared) {
    progress({ step: 'documents', detail: `${prepared.kind === 'build' ? 'build provenance' : 'publish attestation'} statement` });
    record = { ...record, provenance: await storeStatement(blobs, moduleStatementPrefix(address, version), prepared, check) };
  }

  progress({ step: 'record', detail: version });
  check();
  const committed = await commitRecord(blobs, moduleCommittedRecordKey(address, version), record);
  const winner = committed ? record : await readModuleRecord(store, address, version);
  // Another writer committed this version meanwhile (only possible without the lease).
  if (winner && !samePackage(winner, record)) throw differentPackageError(record, winner);
  await kv.put(moduleRecordKey(address, version), JSON.stringify(winner ?? record));

  if (rebuild) await rebuildModuleIndex(store, address, progress, check);
  return committed ? 'published' : 'unchanged';
}

/** Whether R2 no longer holds a committed module version's package as its record says (missing, or another size or SHA-256): a re-run of the same package restores it. One head. */
export async function packageLost(blobs: Store['blobs'], record: ModuleVersionRecord): Promise<boolean> {
  const head = await blobs.head(moduleObjectKey(record.address, record.version, record.filename));
  return !storedAsRecorded(head, { sha256: record.sha256, size: record.size });
}

/** A module version's download document ({"location": …}): the body the publish stores and the Worker rebuilds from the record on a KV miss. */
export function downloadBody(record: ModuleVersionRecord): string {
  return JSON.stringify(moduleDownloadBody(moduleArchivePath(record.address, record.version, record.filename)));
}

/**
 * Checks a committed module version against its record and repairs it: the
 * package object with the recorded size and SHA-256 (uploaded again from
 * `pkg` when its bytes match), the download document, the docs (written
 * when missing or damaged; otherwise immutable, never replaced) and the KV
 * record. Returns how many things it rewrote; throws
 * StoredReleaseMismatchError naming a stored package that differs when `pkg`
 * cannot restore it.
 */
export async function verifyModuleVersion(
  { kv, blobs }: Store,
  record: ModuleVersionRecord,
  docs: ModuleDocs,
  pkg: StoredFile | undefined,
  progress: PublishProgress = () => {},
  check: () => void = () => {},
): Promise<number> {
  const { address, version } = record;
  const name = `${formatModuleAddress(address)} ${version}`;
  progress({ step: 'verify', detail: `the package, 2 documents and the record of ${name}` });
  let repairs = 0;
  const outcome = await verifyObject(
    blobs,
    moduleObjectKey(address, version, record.filename),
    record.filename,
    { sha256: record.sha256, size: record.size },
    pkg,
    progress,
    check,
  );
  if (outcome === 'repaired') repairs++;
  else if (outcome !== 'ok') {
    throw new StoredReleaseMismatchError(
      `${name} is published but its stored package does not match its record: ${outcome}. Publish the same package again to restore it`,
    );
  }
  const recordKey = moduleRecordKey(address, version);
  repairs += await repairDocuments(
    kv,
    [
      { key: moduleDownloadKey(address, version), body: downloadBody(record) },
      { key: moduleDocsKey(address, version), body: JSON.stringify(docs), equivalent: (stored) => isJsonObject(stored) },
      {
        key: recordKey,
        body: JSON.stringify(record),
        equivalent: (stored) => {
          try {
            return samePackage(parseModuleRecord(stored, recordKey), record);
          } catch {
            return false; // damaged: rewrite
          }
        },
      },
    ],
    progress,
    check,
  );
  return repairs;
}

function isJsonObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null;
  } catch {
    return false;
  }
}

/**
 * Rewrites the module's version list and the hostname's catalog from the
 * committed records in R2 (strongly consistent; this module's records are
 * read and validated — a damaged one is reported as a 'warning' with its key
 * and skipped), plus KV records of versions published before R2 records
 * existed (by key). Writes nothing when both are current; lists again after
 * writing and repeats while records appeared meanwhile (writers without the
 * lease); throws ListRebuildRaceError when they keep appearing.
 */
export async function rebuildModuleIndex(
  store: Store,
  address: ModuleAddress,
  progress: PublishProgress = () => {},
  check: () => void = () => {},
): Promise<void> {
  const { kv, blobs } = store;
  const onDamaged = warnOnce(progress);
  for (let attempt = 0; attempt < 10; attempt++) {
    const versions = await moduleVersions(store, address, onDamaged);
    // Lifecycle (src/store/lifecycle/): withdrawn versions leave the list and the catalog.
    const lifecycle = await readLifecycle(blobs, moduleLifecycleKey(address));
    const listed = withoutWithdrawn(versions, lifecycle, (v) => v);
    const body = JSON.stringify(moduleVersionsBody(listed));
    const catalog = JSON.stringify(await withoutWithdrawnInCatalog(blobs, await buildCatalog(store, address, listed), address, lifecycle));
    const [storedBody, storedCatalog] = await Promise.all([kv.get(moduleVersionsKey(address), 'text'), kv.get(moduleCatalogKey(address.hostname), 'text')]);
    if (storedBody !== body || storedCatalog !== catalog) {
      progress({ step: 'index', detail: `${versions.length} versions of ${formatModuleAddress(address)}` });
      check();
      if (storedBody !== body) await putHotKey(kv, moduleVersionsKey(address), body);
      if (storedCatalog !== catalog) await putHotKey(kv, moduleCatalogKey(address.hostname), catalog);
    }
    // Done unless a version was committed meanwhile (only writers without the lease can do that).
    const now = await moduleVersions(store, address, () => {});
    if (now.every((v) => versions.includes(v))) {
      await writeModuleLifecyclePage(kv, address, lifecycle, check);
      return;
    }
  }
  throw new ListRebuildRaceError(`the version list of ${formatModuleAddress(address)} kept changing while being rebuilt; run the publish again`);
}

/** The module's listed versions, newest first: valid R2 records, plus legacy KV records without one. */
async function moduleVersions({ kv, blobs }: Store, address: ModuleAddress, onDamaged: (error: DamagedRecordError) => void): Promise<string[]> {
  const versions = new Set<string>();
  const damaged = new Set<string>();
  const records = await readRecordObjects(blobs, moduleCommittedRecordPrefix(address), parseModuleRecord, (error) => {
    const parsed = parseModuleCommittedRecordKey(error.key);
    if (parsed) damaged.add(parsed.version);
    onDamaged(error);
  });
  for (const record of records) versions.add(record.version);
  const prefix = moduleRecordPrefix(address);
  for (const key of await listAllKeys(kv, prefix)) {
    const version = key.slice(prefix.length);
    if (!damaged.has(version)) versions.add(version);
  }
  return [...versions].sort(compareVersionsDescending);
}

/**
 * The hostname's catalog: every module with a record (R2 keys, strongly
 * consistent, plus legacy KV keys), with `address`'s versions as just
 * validated (`versions`).
 */
async function buildCatalog({ kv, blobs }: Store, address: ModuleAddress, versions: readonly string[]): Promise<ModuleCatalog> {
  const modules = new Map<string, ModuleCatalog['modules'][number]>();
  const add = (parsed: { address: ModuleAddress; version: string } | null) => {
    if (!parsed) return;
    const { namespace, name, system } = parsed.address;
    const id = `${namespace}/${name}/${system}`;
    const entry = modules.get(id) ?? { namespace, name, system, versions: [] };
    if (!entry.versions.includes(parsed.version)) entry.versions.push(parsed.version);
    modules.set(id, entry);
  };
  for (const key of await listAllObjectKeys(blobs, moduleCommittedRecordsOfHostPrefix(address.hostname))) add(parseModuleCommittedRecordKey(key));
  for (const key of await listAllKeys(kv, moduleRecordsOfHostPrefix(address.hostname))) add(parseModuleRecordKey(key));
  const self = `${address.namespace}/${address.name}/${address.system}`;
  if (versions.length > 0) modules.set(self, { namespace: address.namespace, name: address.name, system: address.system, versions: [...versions] });
  else modules.delete(self);
  const list = [...modules.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, m]) => ({
      ...m,
      versions: m.versions.sort(compareVersionsDescending),
    }));
  return { modules: list };
}
