import { putHotKey } from '../kv-write';
import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { sortVersions } from '../../protocol/version';
import { mapLimit } from '../../concurrency';
import { mirrorIndexDocument, versionsDocument } from './documents';
import {
  committedRecordKey,
  committedRecordPrefix,
  docsKey,
  docsPrefix,
  mirrorIndexKey,
  providerIndexKey,
  providerLifecycleKey,
  providerPageKey,
  versionRecordPrefix,
  versionsDocumentKey,
} from '../layout';
import { listAllKeys } from '../list';
import { providerPageData } from '../pages/write';
import { commitRecord, readRecordObjects, repairDocuments, warnOnce, type PublishProgress } from '../records';
import { DamagedRecordError, ListRebuildRaceError } from '../errors';
import type { BlobStore, KvStore } from '../store';
import type { VersionRecord } from '../types';
import type { ProviderDocs } from '../../protocol/provider-docs-shape';
import { parseVersionRecord } from './version-records';
import { updateCatalogEntry, catalogEntryOf } from '../pages/catalog';
import type { ProviderPageData } from '../pages/read';
import { readLifecycle } from '../lifecycle/change';
import { lifecycleWarnings, withoutWithdrawn, type LifecycleState } from '../lifecycle/state';
import { emptyIndex, indexDescription, indexedRecords, indexWith, readProviderIndex, writeProviderIndex, type ProviderIndex } from './version-index';

/**
 * Keeping a provider's lists — the registry's and the mirror's version lists
 * (KV), its page data (KV) and its catalogue entry — in step with its
 * committed version records, at a cost that does not grow with the number of
 * versions: a publish reads the provider's index (one R2 object), adds its
 * version, writes the index back with a conditional write, and writes the
 * documents the index builds. Rebuilding the index from every record is the
 * repair path: when the index is missing (a state from before indexes, which
 * this migrates) or damaged, and on request (rebuildProviderLists).
 */

type Store = { kv: KvStore; blobs: BlobStore };

export interface ListUpdateOptions {
  progress?: PublishProgress;
  /** The held lease's check, run before every write. */
  check?: () => void;
  /**
   * Compare the stored documents with what the index builds and rewrite only
   * what differs (a re-run repairing an interrupted publish), instead of
   * writing them without reading when the index changed.
   */
  verify?: boolean;
  /**
   * Write the three documents without reading them first, even when the index
   * did not change (a lifecycle change: the index is the same, the lists are
   * not; a KV read to compare could be a location's stale copy).
   */
  rewrite?: boolean;
}

/** How many times a conditional write may lose to other writers (only writers without the lease can cause that) before giving up. */
const ATTEMPTS = 10;

/**
 * Adds the committed `records` (and the versions with `docs`, version →
 * provider description) to the provider's index and brings its lists up to
 * date. Reads: the index (1 R2 get, none when `state` hands on the one
 * loaded under the lease); with `verify` or when the index is
 * unchanged, also the three documents and the catalogue's KV copy. Writes:
 * the index (only when it changed), the three documents, the catalogue. A
 * missing or damaged index is rebuilt from the records first (repair).
 * Throws ListRebuildRaceError when other writers changed the index
 * ATTEMPTS times in a row.
 */
export async function updateProviderLists(
  store: Store,
  address: ProviderAddress,
  change: { records: readonly VersionRecord[]; docs?: Readonly<Record<string, string>> },
  options: ListUpdateOptions & { state?: ListsState } = {},
): Promise<void> {
  await applyToIndex(store, address, (base) => indexWith(base, change.records, change.docs ?? {}), false, options);
}

/**
 * The repair path: rebuilds the provider's index from every committed
 * record (R2; records only in KV, from before R2 records were kept, are
 * committed to R2 first and their KV copies deleted) and the docs stored,
 * then checks every list document against it and rewrites what differs. A
 * damaged record is reported as a 'warning' and skipped. Cost grows with the
 * number of versions: for repairs and migrations, not for every publish.
 */
export async function rebuildProviderLists(store: Store, address: ProviderAddress, options: ListUpdateOptions = {}): Promise<void> {
  await applyToIndex(store, address, (base) => base, true, { ...options, verify: true });
}

/** A provider's index as loaded under the lease, to hand on to updateProviderLists (so it is read once). */
export interface ListsState {
  index: ProviderIndex;
  /** The stored index's etag (null: none stored), for the conditional write back. */
  etag: string | null;
  /** The index as stored; null when none is stored or it is damaged (`index` was then rebuilt from the records). */
  stored: ProviderIndex | null;
}

/**
 * Loads the provider's index (one R2 get); when it is missing or damaged,
 * rebuilds it from the records (the repair path, which also migrates records
 * kept only in KV to R2: after this every committed version has its R2
 * record). Call it holding the provider's lease (`check` runs before the
 * migration's writes).
 */
export async function loadProviderLists(store: Store, address: ProviderAddress, options: ListUpdateOptions = {}): Promise<ListsState> {
  const progress = options.progress ?? (() => {});
  const loaded = await readProviderIndex(store.blobs, address);
  if (loaded.index) return { index: loaded.index, etag: loaded.etag, stored: loaded.index };
  if (loaded.damaged)
    progress({ step: 'warning', detail: `${providerIndexKey(address)} is damaged (${loaded.damaged}); rebuilding it from the version records` });
  return { index: await indexFromRecords(store, address, progress, options.check ?? (() => {})), etag: loaded.etag, stored: null };
}

async function applyToIndex(
  store: Store,
  address: ProviderAddress,
  apply: (base: ProviderIndex) => ProviderIndex,
  rebuild: boolean,
  options: ListUpdateOptions & { state?: ListsState },
): Promise<void> {
  const progress = options.progress ?? (() => {});
  const check = options.check ?? (() => {});
  let verify = options.verify ?? false;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    let state = attempt === 0 && options.state ? options.state : await loadProviderLists(store, address, { progress, check });
    if (rebuild && state.stored) state = { ...state, index: await indexFromRecords(store, address, progress, check) };
    // A missing or damaged index is checked against the documents, unless nothing was ever committed (a brand-new
    // provider: its documents are written, not "repaired").
    if (rebuild || (!state.stored && state.index.versions.length > 0)) verify = true;
    const next = apply(state.index);
    if (next.versions.length === 0) return; // nothing committed: nothing to list
    const changed = !state.stored || JSON.stringify(next) !== JSON.stringify(state.stored);
    let etag = state.etag;
    if (changed) {
      progress({ step: 'index', detail: `${next.versions.length} versions of ${formatAddress(address)}` });
      check();
      const written = await writeProviderIndex(store.blobs, next, state.etag);
      if (!written) continue; // another writer changed it since it was read: read again
      etag = written.etag;
    }
    // Lifecycle (src/store/lifecycle/): withdrawn versions leave both lists; deprecations become `warnings`.
    const lifecycle = await readLifecycle(store.blobs, providerLifecycleKey(address));
    const page = await writeListDocuments(store.kv, next, lifecycle, { progress, check, verify: !options.rewrite && (verify || !changed), rewrite: false });
    await updateCatalogEntry(store, catalogEntryOf(page), { progress, check, verify: verify || !changed });
    if (!changed) return;
    // A writer without the lease may have written its (older or newer) documents after ours: the last
    // documents written must be the newest index's, so check it is still the one they were built from.
    const now = await store.blobs.head(providerIndexKey(address));
    if (now?.etag === etag) return;
    verify = true;
  }
  throw new ListRebuildRaceError(`the version lists of ${formatAddress(address)} kept changing while being rebuilt; run the publish again`);
}

/** Writes (or with `verify`, checks and repairs) the version lists and the page data the index and the lifecycle build; returns the page data. */
async function writeListDocuments(
  kv: KvStore,
  index: ProviderIndex,
  lifecycle: LifecycleState,
  options: Required<ListUpdateOptions>,
): Promise<ProviderPageData> {
  const records = indexedRecords(index);
  const listed = withoutWithdrawn(records, lifecycle, (r) => r.version);
  const page = providerPageData(records, new Set(Object.keys(index.docs)), indexDescription(index), lifecycle);
  const documents = [
    { key: mirrorIndexKey(index.address), body: mirrorIndexDocument(listed) },
    { key: versionsDocumentKey(index.address), body: versionsDocument(listed, lifecycleWarnings(lifecycle, formatAddress(index.address))) },
    { key: providerPageKey(index.address), body: JSON.stringify(page) },
  ];
  if (options.verify) {
    await repairDocuments(kv, documents, options.progress, options.check);
    return page;
  }
  options.progress({ step: 'documents', detail: `the version lists (registry, mirror) and the provider page of ${formatAddress(index.address)}` });
  for (const { key, body } of documents) {
    options.check();
    await putHotKey(kv, key, body);
  }
  return page;
}

/**
 * The index as the records and stored docs say it should be: every
 * committed R2 record (a damaged one reported and skipped), records only in
 * KV committed to R2 first (the migration of states from before R2 records),
 * the versions with docs and the newest docs' description.
 */
async function indexFromRecords(store: Store, address: ProviderAddress, progress: PublishProgress, check: () => void): Promise<ProviderIndex> {
  const { kv, blobs } = store;
  const onDamaged = warnOnce(progress);
  const records = new Map<string, VersionRecord>();
  for (const record of await readRecordObjects(blobs, committedRecordPrefix(address), parseVersionRecord, onDamaged)) records.set(record.version, record);

  // KV copies of records: adopt those R2 lacks, then delete them all (R2 holds every record from here on).
  const prefix = versionRecordPrefix(address);
  const kvKeys = await listAllKeys(kv, prefix);
  // Said only when there is something to rebuild from: a brand-new provider has no records.
  if (records.size > 0 || kvKeys.length > 0) progress({ step: 'index', detail: `rebuilding the index of ${formatAddress(address)} from its version records` });
  await mapLimit(kvKeys, 16, async (key) => {
    const version = key.slice(prefix.length);
    if (!records.has(version)) {
      const text = await kv.get(key, 'text');
      if (text === null) return;
      let record: VersionRecord;
      try {
        record = parseVersionRecord(text, key);
      } catch (error) {
        if (error instanceof DamagedRecordError) return onDamaged(error);
        throw error;
      }
      check();
      progress({ step: 'repair', detail: `${key}: committing the KV record to R2 (${committedRecordKey(address, version)})` });
      await commitRecord(blobs, committedRecordKey(address, version), record);
      const committed = await blobs.get(committedRecordKey(address, version));
      if (!committed) return;
      records.set(version, parseVersionRecord(await committed.text(), committedRecordKey(address, version)));
    }
    check();
    await kv.delete(key);
  });

  const withDocs = (await listAllKeys(kv, docsPrefix(address))).map((key) => key.slice(docsPrefix(address).length)).filter((v) => records.has(v));
  const newest = sortVersions(withDocs).pop();
  let description = '';
  if (newest !== undefined) {
    const text = await kv.get(docsKey(address, newest), 'text');
    description = text === null ? '' : ((JSON.parse(text) as ProviderDocs).providerSchema.description ?? '');
  }
  const docs = Object.fromEntries(withDocs.map((v) => [v, v === newest ? description : '']));
  return indexWith(emptyIndex(address), [...records.values()], docs);
}
