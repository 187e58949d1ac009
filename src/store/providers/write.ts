import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { downloadDocument, mirrorVersionDocument } from './documents';
import { committedRecordKey, downloadDocumentKey, mirrorVersionKey, providerStatementPrefix, releaseObjectKey } from '../layout';
import { mapLimit } from '../../concurrency';
import { listAllKeys, listAllObjectKeys } from '../list';
import { loadProviderLists, rebuildProviderLists, updateProviderLists, type ListsState } from './lists';
import { commitRecord, uploadObject, uploadUnlessStored, type PublishOutcome, type PublishProgress, type ReleaseFile } from '../records';

export type { ReleaseFile };
import type { KvStore, Store } from '../store';
import type { VersionRecord } from '../types';
import { differentContentsError, parseVersionRecord, readVersionRecord, sameRelease } from './version-records';
import { verifyVersion } from './verify';
import { checkProvenancePolicy, storeStatement, type Attester } from '../provenance';

/**
 * The write side of the store, used by the scripts (publish-provider, mirror
 * sync, import and remove, lifecycle) and by the Worker's publish API
 * (src/routes/publish/: commits and lifecycle changes). Callers hold the provider's lease
 * (src/store/lease.ts, providerLeaseName) so there is one writer per
 * provider; the order of writes is what keeps readers safe from a writer
 * that dies at any point:
 *
 *   1. leftovers of an uncommitted publish of other bytes are removed;
 *   2. release files in R2 (archives, SHA256SUMS, signature);
 *   3. the version's documents in KV (download per platform, mirror version);
 *   4. the record in R2 (`.records/…/VERSION.json`, created only if absent):
 *      the commit point — from here on the version is published and immutable;
 *   5. the provider's index (`.index/…`, one R2 object, conditional write)
 *      gains the version, then the lists it builds are written: the two
 *      version lists, the page data, the catalogue (src/store/providers/lists.ts).
 *      R2 reads and conditional writes are strongly consistent (KV is not, up
 *      to 60 s between locations), so concurrent publishes of different
 *      versions all end up listed, and a publish reads and writes the same
 *      number of objects however many versions exist.
 * Nothing lists a version before its step 4, so a publish killed at any
 * point leaves the served lists as they were or whole; running it again
 * verifies what is stored against the record and completes it (including a
 * version committed but not yet in the index). The record is read once,
 * under the lease (beginProviderPublish), and handed on.
 */

/** A release file to upload: archive, SHA256SUMS or signature. */

export interface PublishVersionOptions {
  /** Update the provider's lists at the end (default true). */
  rebuildIndex?: boolean;
  /** The held lease; checked before every write (throws LeaseLostError when lost). */
  lease?: { check(): void };
  /** The version's committed record as read under the lease (null: not published), handed on so it is read once; read here when absent. */
  existing?: VersionRecord | null;
  /** The provider's index as loaded under the lease (beginProviderPublish), handed on so it is read once. */
  lists?: ListsState;
  /** Versions whose docs this publish wrote → the provider description in them (for the pages). */
  docs?: Readonly<Record<string, string>>;
  /**
   * How this publish attests (src/provenance/attest.ts): the namespace's
   * provenance policy is checked first (ProvenanceRequiredError, nothing
   * written) and the signed statement stored before the record, which names
   * it. Absent (a mirror, a backfill): no policy, no statement.
   */
  attest?: Attester;
}

/** What a publish reads under the lease before deciding, each object once: the provider's index and the version's record. */
export interface PublishStart {
  existing: VersionRecord | null;
  lists: ListsState;
}

/**
 * Reads, under the provider's lease, what a publish of `version` decides on:
 * the provider's index (rebuilt from the records when missing or damaged,
 * which also moves records kept only in KV to R2) and the version's R2
 * record, each once. Hand both on to publishVersion. Throws
 * DamagedRecordError for a damaged record.
 */
export async function beginProviderPublish(
  store: Store,
  address: ProviderAddress,
  version: string,
  progress: PublishProgress = () => {},
  check: () => void = () => {},
): Promise<PublishStart> {
  const { blobs } = store;
  const key = committedRecordKey(address, version);
  const [lists, object] = await Promise.all([loadProviderLists(store, address, { progress, check }), blobs.get(key)]);
  // An index rebuilt just now may have moved this version's record from KV to R2 after the get above.
  const migrated = !object && !lists.stored && lists.index.versions.some((v) => v.version === version);
  const text = object ? await object.text() : migrated ? ((await blobs.get(key).then((o) => o?.text())) ?? null) : null;
  return { existing: text === null ? null : parseVersionRecord(text, key), lists };
}

/**
 * Publishes one version; the caller holds the provider's lease. When the
 * version is committed with the same bytes, verifies what is stored against
 * the record and rewrites what is missing or wrong ('repaired') or nothing
 * ('unchanged'); throws when the stored release differs and `files` cannot
 * restore it (StoredReleaseMismatchError). When it is committed with
 * different bytes throws VersionConflictError ("already published with
 * different contents"): published versions are immutable. LeaseLostError
 * from `options.lease`, ListRebuildRaceError when the lists kept changing.
 */
export async function publishVersion(
  store: Store,
  record: VersionRecord,
  files: readonly ReleaseFile[],
  progress: PublishProgress = () => {},
  options: PublishVersionOptions = {},
): Promise<PublishOutcome> {
  const { kv, blobs } = store;
  const { address, version } = record;
  const rebuild = options.rebuildIndex ?? true;
  const check = () => options.lease?.check();
  const existing = options.existing !== undefined ? options.existing : await readVersionRecord(store, address, version);
  const lists = (records: VersionRecord[], verify: boolean) =>
    updateProviderLists(store, address, { records, docs: options.docs ?? {} }, { progress, check, verify, ...(options.lists ? { state: options.lists } : {}) });
  if (options.attest) await checkProvenancePolicy(blobs, address.hostname, address.namespace, options.attest);
  if (existing) {
    if (!sameRelease(existing, record)) throw differentContentsError(record, existing);
    const repairs = await verifyVersion(store, existing, files, progress, check);
    // A re-run: the index may lack the version (a publish killed after its commit) or its documents may be stale.
    if (rebuild) await lists([existing], true);
    return repairs > 0 ? 'repaired' : 'unchanged';
  }

  // A publish of other bytes that died before its commit may have left files this one does not replace.
  const present = await removeLeftovers(store, record, files, progress, check);

  for (const file of files) {
    const key = releaseObjectKey(address, version, file.filename);
    // R2 lists are strongly consistent: a file the listing did not show is not stored, so there is nothing to compare.
    if (present.has(key)) await uploadUnlessStored(blobs, key, file, progress, check);
    else {
      progress({ step: 'upload', detail: file.filename });
      check();
      await uploadObject(blobs, key, file);
    }
  }

  progress({ step: 'documents', detail: `${record.packages.length} download documents and the mirror document` });
  await writeDocuments(kv, record, check);

  // The statement before the record (the commit point), which names it: both absent or both whole.
  const prepared = await options.attest?.sign(
    [
      ...record.packages.map((p) => ({ name: p.filename, digest: { sha256: p.shasum } })),
      ...(record.shasumsFile ? [{ name: record.shasumsFilename, digest: { sha256: record.shasumsFile.sha256 } }] : []),
    ],
    { address: formatAddress(address), version },
  );
  if (prepared) {
    progress({ step: 'documents', detail: `${prepared.kind === 'build' ? 'build provenance' : 'publish attestation'} statement` });
    record = { ...record, provenance: await storeStatement(blobs, providerStatementPrefix(address, version), prepared, check) };
  }

  progress({ step: 'record', detail: version });
  check();
  const committed = await commitRecord(blobs, committedRecordKey(address, version), record);
  let stored = record;
  if (!committed) {
    // Another writer committed this version meanwhile (only possible without the lease).
    const winner = await readVersionRecord(store, address, version);
    if (winner && !sameRelease(winner, record)) throw differentContentsError(record, winner);
    stored = winner ?? record;
  }

  if (rebuild) await lists([stored], !committed);
  return committed ? 'published' : 'unchanged';
}

/**
 * Publishes several versions of one provider (an import, a backfill) and
 * rebuilds its lists once at the end instead of after every version (up to 8
 * versions at a time; each must be a different version). Same guarantees per
 * version as publishVersion.
 */
export async function publishVersions(
  store: Store,
  releases: readonly { record: VersionRecord; files: readonly ReleaseFile[] }[],
  progress: PublishProgress = () => {},
  options: Pick<PublishVersionOptions, 'lease'> = {},
): Promise<PublishOutcome[]> {
  // Versions are independent until the lists: publish a few at a time.
  const outcomes = await mapLimit(releases, 8, ({ record, files }) => publishVersion(store, record, files, progress, { ...options, rebuildIndex: false }));
  const byAddress = new Map<string, VersionRecord[]>();
  for (const { record } of releases) byAddress.set(formatAddress(record.address), [...(byAddress.get(formatAddress(record.address)) ?? []), record]);
  for (const records of byAddress.values()) {
    // The stored record of each version (an identical re-run keeps the first signature).
    const stored = await Promise.all(records.map(async (r) => (await readVersionRecord(store, r.address, r.version)) ?? r));
    await updateProviderLists(store, records[0]!.address, { records: stored }, { progress, check: () => options.lease?.check() });
  }
  return outcomes;
}

/**
 * The repair path: rebuilds the provider's index from the committed version
 * records in R2 (strongly consistent; records kept only in KV are moved to
 * R2 first) and the stored docs, then rewrites every list document (registry
 * and mirror version lists, page data, catalogue entry) that differs. A
 * damaged record is reported as a 'warning' and skipped. Reads every record:
 * publishes use updateProviderLists instead (src/store/providers/lists.ts).
 */
export async function rebuildProviderIndex(
  store: Store,
  address: ProviderAddress,
  progress: PublishProgress = () => {},
  check: () => void = () => {},
): Promise<void> {
  await rebuildProviderLists(store, address, { progress, check });
}

async function writeDocuments(kv: KvStore, record: VersionRecord, check: () => void): Promise<void> {
  const { address, version } = record;
  for (const pkg of record.packages) {
    check();
    await kv.put(downloadDocumentKey(address, version, pkg), downloadDocument(record, pkg));
  }
  await kv.put(mirrorVersionKey(address, version), mirrorVersionDocument(record));
}

/**
 * Removes what an uncommitted publish of other bytes left that this one will
 * not overwrite: release files under the version's prefix that are not in
 * `files` (R2 lists are strongly consistent; returns the keys of those in `files` it found stored), and download documents of
 * platforms `record` does not have (KV lists lag up to 60 s on Cloudflare,
 * so a document written by a publish that died within the last minute may
 * survive; nothing lists it, as the version was never committed).
 */
async function removeLeftovers(
  { kv, blobs }: Store,
  record: VersionRecord,
  files: readonly ReleaseFile[],
  progress: PublishProgress,
  check: () => void,
): Promise<Set<string>> {
  const { address, version } = record;
  const filesPrefix = releaseObjectKey(address, version, '');
  const wanted = new Set(files.map((f) => f.filename));
  const listed = await listAllObjectKeys(blobs, filesPrefix);
  for (const key of listed) {
    if (wanted.has(key.slice(filesPrefix.length))) continue;
    progress({ step: 'repair', detail: `removing ${key.slice(filesPrefix.length)}, left by an interrupted publish of other bytes` });
    check();
    await blobs.delete(key);
  }
  const documentPrefix = downloadDocumentKey(address, version, { os: '', arch: '' }).replace(/_$/, '');
  const platforms = new Set(record.packages.map((p) => downloadDocumentKey(address, version, p)));
  for (const key of await listAllKeys(kv, documentPrefix)) {
    if (platforms.has(key)) continue;
    progress({ step: 'repair', detail: `removing ${key}, left by an interrupted publish of other bytes` });
    check();
    await kv.delete(key);
  }
  return new Set(listed.filter((key) => wanted.has(key.slice(filesPrefix.length))));
}
