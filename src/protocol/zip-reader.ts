import { InputError } from './errors';
import { h1Hash, type ZipEntryDigest } from './hashes';
import { entryDataOffset, LOCAL_HEADER_BYTES, locateCentralDirectory, parseCentralDirectory, ZIP_TAIL_BYTES, type ZipDirectory, type ZipEntry } from './zip';

/**
 * The one zip reader and h1 hasher of provider packages: the Worker's (a zip
 * stored in R2: src/store/uploads/stored-zip.ts) and the CLI's (a file:
 * scripts/lib/provider/zip-file.ts) differ only in the ZipSource they pass,
 * so every structure check and the h1 composition exist once, here. Nothing
 * reads the archive whole: the tail and central directory by range, then
 * each entry's local header and data, in the order they are stored.
 */

/** A zip as this reader sees it; one implementation per runtime. */
export interface ZipSource {
  /** The archive's size in bytes. */
  readonly size: number;
  /** Bytes [offset, offset + length) of the archive; rejects when they cannot all be read (the file changed or vanished). */
  read(offset: number, length: number): Promise<Uint8Array>;
  /**
   * Hex SHA-256 of one entry's contents: its `compressedSize` bytes at
   * `dataOffset` (inside the archive: the reader checked that), inflated
   * when `method` is 8 (raw deflate). Rejects with ZipEntryError when they
   * do not inflate, or not to exactly `uncompressedSize` bytes, or (where
   * the runtime checks it) their CRC-32 is not the recorded one.
   */
  entrySha256(entry: ZipEntry, dataOffset: number): Promise<string>;
}

/** An entry's bytes are not what its headers say (a damaged zip, not a failed read): the reader names the file and the fix. */
export class ZipEntryError extends Error {
  override name = 'ZipEntryError';
}

/**
 * The central directory of `source`: its offset, size and entries. Throws
 * InputError naming `label` when it is not a zip this registry accepts
 * (see locateCentralDirectory and parseCentralDirectory in ./zip).
 */
export async function readZipDirectory(source: ZipSource, label: string): Promise<ZipDirectory> {
  const size = source.size;
  if (size < 22) throw new InputError(`${label}: not a readable zip file (${size} bytes); rebuild it`);
  const tailStart = size - Math.min(size, ZIP_TAIL_BYTES);
  const tail = await source.read(tailStart, size - tailStart);
  const located = locateCentralDirectory(tail, size, label);
  // The central directory is usually inside the tail already read.
  const directory =
    located.offset >= tailStart
      ? tail.subarray(located.offset - tailStart, located.offset - tailStart + located.size)
      : await source.read(located.offset, located.size);
  return { offset: located.offset, size: located.size, entries: parseCentralDirectory(directory, located.count, size, label) };
}

/**
 * Go's dirhash Hash1 (`h1:`) of the zip read by readZipDirectory: every
 * entry's local header read and its contents hashed by the source, in
 * stored order (so a file is read front to back). Throws InputError naming
 * `label` for a name Terraform would not unpack as stored (see
 * unsafeNameProblem), a damaged local header, entries that overlap each
 * other or the central directory, a stored entry whose two sizes differ,
 * and an entry whose contents the source refuses (ZipEntryError).
 */
export async function zipH1(source: ZipSource, directory: ZipDirectory, label: string): Promise<string> {
  const digests: ZipEntryDigest[] = [];
  const inOrder = [...directory.entries].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  // The first byte no entry has claimed yet: each entry lies after the previous one, all before the directory.
  let free = 0;
  for (const entry of inOrder) {
    const shown = JSON.stringify(entry.name);
    const problem = unsafeNameProblem(entry.name);
    if (problem !== null) throw new InputError(`${label}: unsafe entry name (${problem}: ${shown}); rebuild the zip`);
    // A stored entry's bytes are exactly its compressedSize, so this is the size it unpacks to.
    if (entry.method !== 8 && entry.compressedSize !== entry.uncompressedSize) {
      throw new InputError(`${label}: entry ${shown} holds ${entry.compressedSize} bytes, its header says ${entry.uncompressedSize}; rebuild the zip`);
    }
    if (entry.localHeaderOffset < free) throw new InputError(`${label}: entry ${shown} overlaps the entry stored before it; rebuild the zip`);
    const offset = entryDataOffset(await source.read(entry.localHeaderOffset, LOCAL_HEADER_BYTES), entry, label);
    if (offset + entry.compressedSize > directory.offset)
      throw new InputError(`${label}: entry ${shown} runs past the end of the file's entries (into its central directory); rebuild the zip`);
    free = offset + entry.compressedSize;
    let sha256Hex: string;
    try {
      sha256Hex = await source.entrySha256(entry, offset);
    } catch (error) {
      if (!(error instanceof ZipEntryError)) throw error;
      throw new InputError(`${label}: entry ${shown} cannot be read (${error.message}); rebuild the zip`);
    }
    digests.push({ name: entry.name, sha256Hex });
  }
  return h1Hash(digests);
}

/**
 * Why Terraform would not unpack an entry of a provider package under the
 * name h1 records, or null. Beyond parseCentralDirectory's rules (which a
 * module package, possibly zipped on Windows, is held to): a backslash (a
 * separator on Windows, part of the name elsewhere), a drive letter, and a
 * newline (Go's dirhash refuses it).
 */
function unsafeNameProblem(name: string): string | null {
  if (name.includes('\\')) return 'a backslash';
  if (/^[a-zA-Z]:/.test(name)) return 'absolute path';
  if (name.includes('\n')) return 'a newline';
  return null;
}
