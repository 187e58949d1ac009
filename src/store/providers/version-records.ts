import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { committedRecordKey, committedRecordPrefix, versionRecordKey, versionRecordPrefix } from '../layout';
import { mapLimit } from '../../concurrency';
import { listAllKeys } from '../list';
import { parseStoredJson, readCommittedRecord, readRecordObjects } from '../records';
import type { Store } from '../store';
import type { PackageRecord, VersionRecord } from '../types';
import { DamagedRecordError, VersionConflictError } from '../errors';

/**
 * A provider version's committed record (`.records/…/VERSION.json` in R2,
 * the commit point; the KV copy only for versions published before R2
 * records existed): parsing and validating it, reading one or all of a
 * provider's, and comparing a draft with it (immutability).
 */

/**
 * Parses and validates a stored version record. Throws DamagedRecordError
 * naming `key` when it is not JSON or lacks a field the documents need.
 */
export function parseVersionRecord(text: string, key: string): VersionRecord {
  const value = parseStoredJson(text, key);
  const r = value as Partial<VersionRecord>;
  const fail = (why: string): never => {
    throw new DamagedRecordError(key, why);
  };
  if (typeof r !== 'object' || r === null) fail('not an object');
  if (typeof r.version !== 'string' || !r.version) fail('no version');
  const a = r.address as Partial<ProviderAddress> | undefined;
  if (!a || typeof a.hostname !== 'string' || typeof a.namespace !== 'string' || typeof a.type !== 'string') fail('no address');
  if (!Array.isArray(r.protocols) || !r.protocols.every((p) => typeof p === 'string')) fail('protocols is not a list of strings');
  if (!Array.isArray(r.packages) || r.packages.length === 0) fail('no packages');
  for (const p of r.packages as Partial<PackageRecord>[]) {
    if (
      typeof p?.os !== 'string' ||
      typeof p.arch !== 'string' ||
      typeof p.filename !== 'string' ||
      typeof p.shasum !== 'string' ||
      !/^[0-9a-f]{64}$/.test(p.shasum) ||
      typeof p.h1 !== 'string' ||
      typeof p.size !== 'number'
    ) {
      fail(`package ${JSON.stringify(p?.filename ?? p)} is incomplete`);
    }
  }
  if (typeof r.shasumsFilename !== 'string' || typeof r.shasumsSignatureFilename !== 'string') fail('no SHA256SUMS file names');
  if (typeof r.signingKey?.key_id !== 'string' || typeof r.signingKey.ascii_armor !== 'string') fail('no signing key');
  return r as VersionRecord;
}

/**
 * The committed record of a version, or null when it was never (completely)
 * published. Reads the R2 record (strongly consistent); a version published
 * before records were kept in R2 is found through its KV record. Throws
 * DamagedRecordError for a damaged record.
 */
export async function readVersionRecord(store: Store, address: ProviderAddress, version: string): Promise<VersionRecord | null> {
  return readCommittedRecord(store, committedRecordKey(address, version), versionRecordKey(address, version), parseVersionRecord);
}

/**
 * Every committed version record of a provider: the R2 records, plus KV
 * records of versions published before R2 records existed. A damaged record
 * is reported through `onDamaged` (with its key) and skipped.
 */
export async function listVersionRecords(
  { kv, blobs }: Store,
  address: ProviderAddress,
  onDamaged: (error: DamagedRecordError) => void = () => {},
): Promise<VersionRecord[]> {
  const records = new Map<string, VersionRecord>();
  const load = async (key: string, read: () => Promise<string | null>) => {
    const text = await read();
    if (text === null) return;
    try {
      const record = parseVersionRecord(text, key);
      records.set(record.version, record);
    } catch (error) {
      if (error instanceof DamagedRecordError) onDamaged(error);
      else throw error;
    }
  };
  for (const record of await readRecordObjects(blobs, committedRecordPrefix(address), parseVersionRecord, onDamaged)) records.set(record.version, record);
  const prefix = versionRecordPrefix(address);
  const legacy = (await listAllKeys(kv, prefix)).filter((key) => !records.has(key.slice(prefix.length)));
  await mapLimit(legacy, 16, (key) => load(key, () => kv.get(key, 'text')));
  return [...records.values()];
}

/**
 * True when two records describe the same release: the same archives (file
 * name, SHA-256 and size of each), the same SHA256SUMS when both know it, and
 * the same protocols. The signature may differ (a re-run signs again).
 */
export function sameRelease(a: VersionRecord, b: VersionRecord): boolean {
  const files = (r: VersionRecord) =>
    JSON.stringify([...r.packages].sort((x, y) => x.filename.localeCompare(y.filename)).map((p) => [p.filename, p.shasum, p.size]));
  const sums = a.shasumsFile && b.shasumsFile ? a.shasumsFile.sha256 === b.shasumsFile.sha256 && a.shasumsFile.size === b.shasumsFile.size : true;
  return files(a) === files(b) && sums && JSON.stringify(a.protocols) === JSON.stringify(b.protocols);
}

/** The VersionConflictError for a version published with other bytes. */
export function differentContentsError(record: VersionRecord, existing: VersionRecord): VersionConflictError {
  return new VersionConflictError(
    `${formatAddress(record.address)} ${record.version} is already published with different contents (${describeDifference(existing, record)}); ` +
      'published versions are immutable — publish a new version instead',
  );
}

/** One phrase saying how `draft` differs from `existing`. */
export function describeDifference(existing: VersionRecord, draft: VersionRecord): string {
  if (JSON.stringify(existing.protocols) !== JSON.stringify(draft.protocols)) {
    return `protocols ${JSON.stringify(existing.protocols)} → ${JSON.stringify(draft.protocols)}`;
  }
  const before = new Map(existing.packages.map((p) => [p.filename, p]));
  for (const p of draft.packages) {
    const old = before.get(p.filename);
    if (!old) return `${p.filename} is new`;
    if (old.shasum !== p.shasum) return `${p.filename} has SHA-256 ${p.shasum}, published ${old.shasum}`;
    if (old.size !== p.size) return `${p.filename} has ${p.size} bytes, published ${old.size}`;
  }
  const now = new Set(draft.packages.map((p) => p.filename));
  const gone = existing.packages.find((p) => !now.has(p.filename));
  if (gone) return `${gone.filename} is missing`;
  if (existing.shasumsFile && draft.shasumsFile && existing.shasumsFile.sha256 !== draft.shasumsFile.sha256) return 'the SHA256SUMS file differs';
  return 'different packages';
}
