import { putHotKey } from './kv-write';
import { mapLimit } from '../concurrency';
import { listAllObjectKeys } from './list';
import type { BlobStore, KvStore, Store } from './store';
import { DamagedRecordError } from './errors';

/**
 * The pieces every publish (providers and modules) is built from, so both
 * keep the same guarantees: version records committed to R2 (created only
 * if absent: the commit point, strongly consistent, the source of list
 * rebuilds), damaged records reported with their key and skipped, and the
 * verification of what is stored against a record, repairing what an
 * interrupted publish left missing.
 */

export type PublishStep = 'lease' | 'upload' | 'skip-upload' | 'documents' | 'record' | 'index' | 'verify' | 'repair' | 'warning';

export interface PublishProgress {
  (event: { step: PublishStep; detail: string }): void;
}

/** published: written now; unchanged: already published and verified whole; repaired: already published, missing parts rewritten. */
export type PublishOutcome = 'published' | 'unchanged' | 'repaired';

/** Bytes to store in R2 with their identity (release file, module package). */
export interface StoredFile {
  sha256Hex: string;
  size: number;
  contentType: string;
  /** Opens the bytes; called only when the stored object is missing or differs. */
  open(): ReadableStream | Uint8Array;
}

/** A release file to store: its bytes and the name it is published under. */
export interface ReleaseFile extends StoredFile {
  filename: string;
}

/** Writes `file` under `key`, its SHA-256 in the object's metadata (what verification compares). */
export async function uploadObject(blobs: BlobStore, key: string, file: StoredFile): Promise<void> {
  await blobs.put(key, file.open(), {
    httpMetadata: { contentType: file.contentType },
    customMetadata: { sha256: file.sha256Hex },
  });
}

/**
 * Uploads `file` under `key` unless R2 already holds it with the same size
 * and SHA-256 (a re-run after an interrupted publish skips what landed).
 * Reports `skip-upload` or `upload` with `label`; `check` runs before the write.
 */
export async function uploadUnlessStored(
  blobs: BlobStore,
  key: string,
  file: StoredFile & { filename: string },
  progress: PublishProgress,
  check: () => void,
  label = file.filename,
): Promise<void> {
  const head = await blobs.head(key);
  if (head && head.size === file.size && head.customMetadata?.sha256 === file.sha256Hex) {
    progress({ step: 'skip-upload', detail: file.filename });
    return;
  }
  progress({ step: 'upload', detail: label });
  check();
  await uploadObject(blobs, key, file);
}

/**
 * Commits a record: creates the R2 object `key` only if absent (atomic).
 * Returns false when one was already there (nothing written).
 */
export async function commitRecord(blobs: BlobStore, key: string, record: unknown): Promise<boolean> {
  const written = await blobs.put(key, JSON.stringify(record), {
    httpMetadata: { contentType: 'application/json' },
    onlyIf: { etagDoesNotMatch: '*' },
  });
  return written !== null;
}

/**
 * The committed record of one version, parsed by `parse` (which throws
 * DamagedRecordError for a damaged one), or null when it was never
 * (completely) published. Reads the R2 object `committedKey` (strongly
 * consistent); a version published before records were kept in R2 is found
 * through its KV record `kvKey`.
 */
export async function readCommittedRecord<T>(
  { kv, blobs }: Store,
  committedKey: string,
  kvKey: string,
  parse: (text: string, key: string) => T,
): Promise<T | null> {
  const object = await blobs.get(committedKey);
  if (object) return parse(await object.text(), committedKey);
  const text = await kv.get(kvKey, 'text');
  return text === null ? null : parse(text, kvKey);
}

/**
 * Every record under the R2 `prefix`, parsed by `parse` (which throws
 * DamagedRecordError for a damaged one: reported through `onDamaged` and
 * skipped). Other errors are thrown.
 */
export async function readRecordObjects<T>(
  blobs: BlobStore,
  prefix: string,
  parse: (text: string, key: string) => T,
  onDamaged: (error: DamagedRecordError) => void,
): Promise<T[]> {
  const keys = await listAllObjectKeys(blobs, prefix);
  const records = await mapLimit(keys, 16, async (key) => {
    const object = await blobs.get(key);
    if (!object) return null; // deleted meanwhile
    try {
      return parse(await object.text(), key);
    } catch (error) {
      if (error instanceof DamagedRecordError) {
        onDamaged(error);
        return null;
      }
      throw error;
    }
  });
  return records.filter((r): r is Awaited<T> => r !== null) as T[];
}

/** An onDamaged for readRecordObjects that reports each damaged key once, as a 'warning'. */
export function warnOnce(progress: PublishProgress, warned = new Set<string>()): (error: DamagedRecordError) => void {
  return (error) => {
    if (warned.has(error.key)) return;
    warned.add(error.key);
    progress({ step: 'warning', detail: error.message });
  };
}

/**
 * Whether a stored object (its `head`, null when missing) holds what a record
 * says: the recorded size and SHA-256 (as stored in its metadata), each when
 * recorded. The one check of a release file against its record: the verify,
 * the repair and the publish start's look for lost files call it.
 */
export function storedAsRecorded(
  head: { size: number; customMetadata?: Record<string, string> } | null,
  want: { sha256: string | undefined; size: number | undefined },
): boolean {
  return head !== null && (want.size === undefined || head.size === want.size) && (want.sha256 === undefined || head.customMetadata?.sha256 === want.sha256);
}

/**
 * Checks the R2 object `key` against `want` (size and SHA-256; an undefined
 * field is not checked). When it is missing or differs and `file` has the
 * wanted bytes, uploads it again ('repaired'); otherwise returns a phrase
 * describing the mismatch for the caller to report. 'ok' when it matches.
 */
export async function verifyObject(
  blobs: BlobStore,
  key: string,
  label: string,
  want: { sha256: string | undefined; size: number | undefined },
  file: StoredFile | undefined,
  progress: PublishProgress,
  check: () => void,
): Promise<'ok' | 'repaired' | string> {
  const head = await blobs.head(key);
  const actual = head ? { sha256: head.customMetadata?.sha256, size: head.size } : null;
  if (storedAsRecorded(head, want)) return 'ok';
  const what = actual
    ? `stored ${actual.size} bytes, SHA-256 ${actual.sha256 ?? 'unknown'}; the record says ${want.size ?? '?'} bytes, ${want.sha256 ?? '?'}`
    : 'missing';
  if (file && (want.sha256 === undefined || file.sha256Hex === want.sha256) && (want.size === undefined || file.size === want.size)) {
    progress({ step: 'repair', detail: `${label}: ${what}; uploading it again` });
    check();
    await uploadObject(blobs, key, file);
    return 'repaired';
  }
  return `${label}: ${what}`;
}

/** A KV document a committed version must have: its key, the body the record builds, and optionally which other stored bodies are equivalent. */
export interface ExpectedDocument {
  key: string;
  body: string;
  /** True when a stored body that is not byte-equal still counts (e.g. an older serialisation of the same record). */
  equivalent?(stored: string): boolean;
}

/**
 * Rewrites every document of `documents` that is missing or differs from
 * its expected body (and is not `equivalent`). Returns how many it rewrote.
 */
export async function repairDocuments(kv: KvStore, documents: readonly ExpectedDocument[], progress: PublishProgress, check: () => void): Promise<number> {
  let repairs = 0;
  await mapLimit(documents, 8, async ({ key, body, equivalent }) => {
    const stored = await kv.get(key, 'text');
    if (stored === body) return;
    if (stored !== null && equivalent?.(stored)) return;
    progress({ step: 'repair', detail: `${key}: ${stored === null ? 'missing' : 'differs from the record'}; writing it again` });
    check();
    await putHotKey(kv, key, body);
    repairs++;
  });
  return repairs;
}

/** Parses a stored object's JSON text. Throws DamagedRecordError naming `key` ("not JSON") when it does not parse; the caller checks the shape. */
export function parseStoredJson(text: string, key: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new DamagedRecordError(key, 'not JSON');
  }
}
