import { formatModuleAddress, moduleDownloadBody } from '../../protocol/modules-v1';
import {
  moduleArchivePath,
  moduleCommittedRecordKey,
  moduleDocsKey,
  moduleDownloadKey,
  moduleStatementPrefix,
  moduleObjectKey,
  moduleRecordKey,
} from '../layout';
import type { Store } from '../store';
import { listAllObjectKeys } from '../list';
import {
  commitRecord,
  repairDocuments,
  storedAsRecorded,
  uploadUnlessStored,
  verifyObject,
  type PublishOutcome,
  type PublishProgress,
  type StoredFile,
} from '../records';
import type { ModuleDocs, ModuleVersionRecord } from './types';
import { differentPackageError, parseModuleRecord, readModuleRecord, samePackage } from './record';
import { rebuildModuleIndex } from './lists';
import { checkProvenancePolicy, storeStatement, type Attester } from '../provenance';
import { StoredReleaseMismatchError } from '../errors';

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
