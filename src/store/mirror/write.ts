import { putHotKey } from '../kv-write';
import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { sortVersions } from '../../protocol/version';
import { downloadDocument, mirrorVersionDocument } from '../providers/documents';
import { committedRecordKey, downloadDocumentKey, mirrorIndexPrefix, mirrorVersionKey, parseMirrorIndexKey, releaseObjectKey } from '../layout';
import { publishVersion, type ReleaseFile } from '../providers/write';
import { listVersionRecords, readVersionRecord } from '../providers/version-records';
import { type PublishProgress, uploadUnlessStored } from '../records';
import type { Store } from '../store';
import { listAllKeys } from '../list';
import type { PackageRecord, VersionRecord } from '../types';
import { VersionConflictError } from '../errors';
import { listedVersion, versionsDocumentRoom, type VersionsDocumentRoom } from '../value-limits';
import { checkProviderKeys } from '../key-limits';

/**
 * The write side for providers mirrored from another registry (`npm run
 * mirror`). A mirrored version may grow (a platform added to the allow-list
 * later) but what it holds never changes: the same order as a publish
 * (release files, documents, record; the caller rebuilds the lists last).
 */

export type MirrorOutcome = 'mirrored' | 'unchanged';

/**
 * Stores `record` (every package it lists verified by the caller) with its
 * files; call it holding the provider's lease (`lease` is checked before each
 * write). Its KV keys are checked first (checkProviderKeys: KeyTooLongError, nothing
 * written when one would pass 512 bytes). A version not stored yet is checked against KV's value limit
 * (`room`'s take: InputError, nothing written when its versions document would
 * pass 25 MiB; without `room`, a fresh versionsDocumentRoom, 1 KV read; a sync
 * passes one room per provider, so its new versions count together), then
 * published whole (publishVersion). A
 * stored version gains the packages it lacks, checked against the same room
 * first (only their platforms count: InputError, nothing written): their archives, then every
 * document, then the committed record (replaced only if it is still the one
 * read: an R2 conditional write). A package it already holds
 * must be identical (filename, SHA-256, h1, size) or this throws
 * VersionConflictError and writes nothing; so does a record changed
 * meanwhile by a writer without the lease. Returns 'unchanged' when nothing was missing.
 * Never rebuilds the provider lists: call rebuildProviderIndex once after.
 */
export async function storeMirroredVersion(
  store: Store,
  record: VersionRecord,
  files: readonly ReleaseFile[],
  progress: PublishProgress = () => {},
  lease?: { check(): void },
  room: VersionsDocumentRoom = versionsDocumentRoom(store.kv, record.address),
): Promise<MirrorOutcome> {
  // Its KV keys must fit (sync, import and pull-through all come here): refused before anything is read or written.
  checkProviderKeys(record.address, record.version, `${formatAddress(record.address)} ${record.version}`);
  const { kv, blobs } = store;
  const check = () => lease?.check();
  const existing = await readVersionRecord(store, record.address, record.version);
  if (!existing) {
    // A new version must fit the versions document KV holds: refused before anything is written.
    await room.take(listedVersion(record));
    const outcome = await publishVersion(store, record, files, progress, { rebuildIndex: false, existing: null, ...(lease ? { lease } : {}) });
    return outcome === 'published' ? 'mirrored' : 'unchanged';
  }
  const held = new Map(existing.packages.map((p) => [`${p.os}_${p.arch}`, p]));
  const added: PackageRecord[] = [];
  for (const pkg of record.packages) {
    const ours = held.get(`${pkg.os}_${pkg.arch}`);
    if (!ours) {
      added.push(pkg);
    } else if (ours.shasum !== pkg.shasum || ours.h1 !== pkg.h1 || ours.size !== pkg.size || ours.filename !== pkg.filename) {
      throw new VersionConflictError(
        `${formatAddress(record.address)} ${record.version} ${pkg.os}_${pkg.arch}: the mirror holds SHA-256 ${ours.shasum} (${ours.h1}), the source now has ${pkg.shasum} (${pkg.h1}); mirrored bytes never change — kept ours`,
      );
    }
  }
  if (added.length === 0) return 'unchanged';
  // The versions document grows by the platforms added: the same check (only their entries count), before anything is written.
  await room.take(listedVersion(record), listedVersion(existing));
  const addedNames = new Set(added.map((p) => p.filename));
  for (const file of files) {
    if (!addedNames.has(file.filename)) continue;
    await uploadUnlessStored(blobs, releaseObjectKey(record.address, record.version, file.filename), file, progress, check);
  }
  const merged: VersionRecord = { ...existing, packages: [...existing.packages, ...added] };
  progress({ step: 'documents', detail: `${merged.packages.length} platforms of ${record.version}` });
  for (const pkg of merged.packages) {
    check();
    await putHotKey(kv, downloadDocumentKey(merged.address, merged.version, pkg), downloadDocument(merged, pkg));
  }
  check();
  await putHotKey(kv, mirrorVersionKey(merged.address, merged.version), mirrorVersionDocument(merged));
  progress({ step: 'record', detail: record.version });
  check();
  const recordKey = committedRecordKey(merged.address, merged.version);
  const current = await blobs.head(recordKey);
  const written = await blobs.put(recordKey, JSON.stringify(merged), {
    httpMetadata: { contentType: 'application/json' },
    onlyIf: current ? { etagMatches: current.etag } : { etagDoesNotMatch: '*' },
  });
  if (!written) {
    throw new VersionConflictError(
      `${formatAddress(record.address)} ${record.version} changed while platforms were being added (another writer without the lease); run the sync again`,
    );
  }
  return 'mirrored';
}

/** One provider the mirror holds, with its versions and their platforms (ascending versions). */
export interface MirroredProvider {
  address: ProviderAddress;
  versions: { version: string; platforms: string[]; signedBy: string; mirroredAt: string }[];
}

/** Every provider whose mirror index is stored (our own hostname's included), sorted by address. */
export async function listMirroredProviders(store: Store): Promise<MirroredProvider[]> {
  const { kv } = store;
  const addresses: ProviderAddress[] = [];
  for (const name of await listAllKeys(kv, mirrorIndexPrefix)) {
    const address = parseMirrorIndexKey(name);
    if (address) addresses.push(address);
  }
  addresses.sort((a, b) => formatAddress(a).localeCompare(formatAddress(b)));
  const result: MirroredProvider[] = [];
  for (const address of addresses) {
    const records = await listVersionRecords(store, address);
    const versions = sortVersions(records.map((r) => r.version)).map((version) => {
      const record = records.find((r) => r.version === version)!;
      return {
        version,
        platforms: record.packages.map((p) => `${p.os}_${p.arch}`).sort(),
        signedBy: record.signingKey.key_id,
        mirroredAt: record.publishedAt,
      };
    });
    result.push({ address, versions });
  }
  return result;
}
