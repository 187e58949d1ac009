import { formatAddress } from '../../protocol/address';
import { downloadDocument, mirrorVersionDocument } from './documents';
import { downloadDocumentKey, mirrorVersionKey, releaseObjectKey } from '../layout';
import { repairDocuments, storedAsRecorded, verifyObject, type PublishProgress } from '../records';
import type { Store } from '../store';
import type { VersionRecord } from '../types';
import { StoredReleaseMismatchError } from '../errors';
import type { ReleaseFile } from '../records';

/**
 * Checks a committed version against its record and repairs it from `files`
 * (release files whose bytes match the record): release files present with
 * the recorded size and SHA-256, every document equal to what the record
 * builds, the KV record present. Returns how many things it rewrote; throws
 * StoredReleaseMismatchError naming every mismatch it cannot repair.
 */
export async function verifyVersion(
  { kv, blobs }: Store,
  record: VersionRecord,
  files: readonly ReleaseFile[],
  progress: PublishProgress = () => {},
  check: () => void = () => {},
): Promise<number> {
  const { address, version } = record;
  const name = `${formatAddress(address)} ${version}`;
  const expected = recordedReleaseFiles(record);
  const available = new Map(files.map((f) => [f.filename, f]));
  const problems: string[] = [];
  let repairs = 0;
  progress({ step: 'verify', detail: `${expected.size} release files, ${record.packages.length + 1} documents and the record of ${name}` });

  for (const [filename, want] of expected) {
    const outcome = await verifyObject(blobs, releaseObjectKey(address, version, filename), filename, want, available.get(filename), progress, check);
    if (outcome === 'repaired') repairs++;
    else if (outcome !== 'ok') problems.push(outcome);
  }

  repairs += await repairDocuments(
    kv,
    [
      ...record.packages.map((pkg) => ({ key: downloadDocumentKey(address, version, pkg), body: downloadDocument(record, pkg) })),
      { key: mirrorVersionKey(address, version), body: mirrorVersionDocument(record) },
    ],
    progress,
    check,
  );

  if (problems.length > 0) {
    throw new StoredReleaseMismatchError(
      `${name} is published but its stored files do not match its record: ${problems.join('; ')}. ` +
        'Publish the same release files again to restore them (the signature cannot be re-created byte for byte; re-sign by publishing a new version)',
    );
  }
  return repairs;
}

/** A recorded release file's digest (each part undefined when an old record lacks it). */
export interface RecordedFile {
  sha256: string | undefined;
  size: number | undefined;
}

/** The release files a version's record names (archives, SHA256SUMS, its signature), by filename, with their recorded digests. */
export function recordedReleaseFiles(record: VersionRecord): Map<string, RecordedFile> {
  const expected = new Map<string, RecordedFile>();
  for (const p of record.packages) expected.set(p.filename, { sha256: p.shasum, size: p.size });
  expected.set(record.shasumsFilename, { sha256: record.shasumsFile?.sha256, size: record.shasumsFile?.size });
  expected.set(record.shasumsSignatureFilename, { sha256: record.signatureFile?.sha256, size: record.signatureFile?.size });
  return expected;
}

/**
 * The release files of a committed version that R2 no longer holds as its
 * record says (missing, or another size or SHA-256): lost objects a re-run
 * of the same release restores. Heads only; reads nothing else.
 */
export async function lostReleaseFiles(blobs: Store['blobs'], record: VersionRecord): Promise<string[]> {
  const expected = [...recordedReleaseFiles(record)];
  const heads = await Promise.all(expected.map(([filename]) => blobs.head(releaseObjectKey(record.address, record.version, filename))));
  return expected.filter(([, want], i) => !storedAsRecorded(heads[i] ?? null, want)).map(([filename]) => filename);
}
