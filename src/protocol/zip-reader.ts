import { InputError } from './errors';
import { h1Hash, type ZipEntryDigest } from './hashes';
import {
  entryDataOffset,
  LOCAL_HEADER_BYTES,
  locateCentralDirectory,
  parseCentralDirectory,
  ZIP_TAIL_BYTES,
  type ZipDirectory,
  type ZipEntry,
  type ZipKind,
} from './zip';

/**
 * The one zip reader of the registry: provider packages (hashed to h1 by the
 * Worker over R2, src/store/uploads/stored-zip.ts, and by the CLI over a
 * file, scripts/lib/provider/zip-file.ts) and module packages (read whole
 * by publish-module, scripts/lib/module/archive.ts, and by the module proxy,
 * src/mirror/modules/repack.ts, both over bytes in memory: zipInMemory).
 * A runtime supplies only ranged reads and how one entry is inflated, so
 * every structure and entry check exists once, here and in ./zip. Nothing
 * reads the archive whole: the tail and central directory by range, then
 * each entry's local header and data, in the order they are stored.
 */

/** The bytes of a zip, read by range; one implementation per runtime. */
export interface ZipBytes {
  /** The archive's size in bytes. */
  readonly size: number;
  /** Bytes [offset, offset + length) of the archive; rejects when they cannot all be read (the file changed or vanished). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** A zip whose entries are hashed, never held (provider packages, up to hundreds of MB). */
export interface ZipSource extends ZipBytes {
  /**
   * Hex SHA-256 of one entry's contents: its `compressedSize` bytes at
   * `dataOffset` (inside the archive: the reader checked that), inflated
   * when `method` is 8 (raw deflate). Rejects with ZipEntryError when they
   * do not inflate, or not to exactly `uncompressedSize` bytes, or (where
   * the runtime checks it) their CRC-32 is not the recorded one.
   */
  entrySha256(entry: ZipEntry, dataOffset: number): Promise<string>;
}

/** A zip whose entries' contents are read (module packages: their files, docs and links). */
export interface ZipContentSource extends ZipBytes {
  /**
   * One entry's contents, as ZipSource.entrySha256 reads them: exactly
   * `uncompressedSize` bytes, or a rejection with ZipEntryError.
   */
  entryBytes(entry: ZipEntry, dataOffset: number): Promise<Uint8Array>;
}

/**
 * A runtime's raw-deflate inflater: resolves with the inflated bytes of
 * `compressed`, rejects when they are not raw deflate, and may stop (reject)
 * once there are more than `maxBytes` of them, so a deflate bomb is not
 * inflated whole.
 */
export type RawInflater = (compressed: Uint8Array, maxBytes: number) => Promise<Uint8Array>;

/** An entry's bytes are not what its headers say (a damaged zip, not a failed read): the reader names the file and the fix. */
export class ZipEntryError extends Error {
  override name = 'ZipEntryError';
}

/**
 * A zip held in memory (`bytes`) as a ZipContentSource, its deflated
 * entries inflated by the runtime's `inflateRaw` (node:zlib in the CLI,
 * DecompressionStream in the Worker). A stored entry's contents are a view
 * of `bytes`, not a copy.
 */
export function zipInMemory(bytes: Uint8Array, inflateRaw: RawInflater): ZipContentSource {
  return {
    size: bytes.byteLength,
    async read(offset, length) {
      if (offset < 0 || offset + length > bytes.byteLength)
        throw new Error(`bytes ${offset}..${offset + length} lie outside the zip (${bytes.byteLength} bytes)`);
      return bytes.subarray(offset, offset + length);
    },
    entryBytes: (entry, dataOffset) => inflatedEntry(bytes.subarray(dataOffset, dataOffset + entry.compressedSize), entry, inflateRaw),
  };
}

/**
 * An entry's contents from its `compressed` bytes (all `compressedSize` of
 * them), as ZipContentSource.entryBytes gives them: a stored entry's bytes
 * as they are, a deflated one's inflated by `inflateRaw` to at most its
 * recorded size. Rejects with ZipEntryError when they do not inflate to
 * exactly `uncompressedSize` bytes. Every runtime's ZipContentSource calls
 * this, so a damaged entry is worded the same wherever it is read.
 */
export async function inflatedEntry(compressed: Uint8Array, entry: ZipEntry, inflateRaw: RawInflater): Promise<Uint8Array> {
  // A stored entry's two sizes are equal: the reader checked that before asking.
  if (entry.method !== 8) return compressed;
  let inflated: Uint8Array;
  try {
    inflated = await inflateRaw(compressed, entry.uncompressedSize);
  } catch (error) {
    throw new ZipEntryError(
      `does not inflate to the ${entry.uncompressedSize} bytes its header says: ${String((error as Error)?.message ?? error).slice(0, 120)}`,
    );
  }
  if (inflated.byteLength !== entry.uncompressedSize)
    throw new ZipEntryError(`inflates to ${inflated.byteLength} bytes, its header says ${entry.uncompressedSize}`);
  return inflated;
}

/**
 * The central directory of `source`: its offset, size and entries. Throws
 * InputError naming `label` when it is not a zip this registry accepts
 * (see locateCentralDirectory and parseCentralDirectory in ./zip); `kind`
 * is what the messages call it.
 */
export async function readZipDirectory(source: ZipBytes, label: string, kind: ZipKind = 'provider'): Promise<ZipDirectory> {
  const size = source.size;
  if (size < 22) throw new InputError(`${label}: not a readable zip file (${size} bytes); rebuild it`);
  const tailStart = size - Math.min(size, ZIP_TAIL_BYTES);
  const tail = await source.read(tailStart, size - tailStart);
  const located = locateCentralDirectory(tail, size, label, kind);
  // The central directory is usually inside the tail already read.
  const directory =
    located.offset >= tailStart
      ? tail.subarray(located.offset - tailStart, located.offset - tailStart + located.size)
      : await source.read(located.offset, located.size);
  return { offset: located.offset, size: located.size, entries: parseCentralDirectory(directory, located.count, size, label, kind) };
}

/**
 * Go's dirhash Hash1 (`h1:`) of the provider package read by
 * readZipDirectory: every entry checked (see checkedEntries) and its
 * contents hashed by the source, in stored order (so a file is read front
 * to back). Throws InputError naming `label` as checkedEntries does.
 */
export async function zipH1(source: ZipSource, directory: ZipDirectory, label: string): Promise<string> {
  const digests: ZipEntryDigest[] = [];
  await checkedEntries(source, directory, label, 'provider', async (entry, offset) => {
    digests.push({ name: entry.name, sha256Hex: await source.entrySha256(entry, offset) });
  });
  return h1Hash(digests);
}

/**
 * The contents of the entries of `directory` that `wanted` picks (called
 * for every entry, in stored order), by entry; every entry checked first
 * (see checkedEntries), whether wanted or not. Only the wanted entries are
 * inflated, each to at most its recorded size. Throws InputError naming
 * `label` as checkedEntries does; `wanted` may throw too (a limit).
 */
export async function readZipEntries(
  source: ZipContentSource,
  directory: ZipDirectory,
  label: string,
  kind: ZipKind,
  wanted: (entry: ZipEntry) => boolean,
): Promise<Map<ZipEntry, Uint8Array>> {
  const contents = new Map<ZipEntry, Uint8Array>();
  await checkedEntries(source, directory, label, kind, async (entry, offset) => {
    if (wanted(entry)) contents.set(entry, await source.entryBytes(entry, offset));
  });
  return contents;
}

/**
 * Reads each entry's local header, in stored order, and calls `visit` with
 * the entry and its data offset once the entry passed every check. Throws
 * InputError naming `label` for a name Terraform would not unpack as stored
 * (provider packages: see unsafeNameProblem), a damaged local header,
 * entries that overlap each other or the central directory, a stored entry
 * whose two sizes differ, and an entry whose contents `visit` finds damaged
 * (ZipEntryError).
 */
async function checkedEntries(
  source: ZipBytes,
  directory: ZipDirectory,
  label: string,
  kind: ZipKind,
  visit: (entry: ZipEntry, dataOffset: number) => Promise<void>,
): Promise<void> {
  const inOrder = [...directory.entries].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  // The first byte no entry has claimed yet: each entry lies after the previous one, all before the directory.
  let free = 0;
  for (const entry of inOrder) {
    const shown = JSON.stringify(entry.name);
    // A module package may come from Windows: its backslashes are separators, which the module rules read as such.
    const problem = kind === 'provider' ? unsafeNameProblem(entry.name) : null;
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
    try {
      await visit(entry, offset);
    } catch (error) {
      if (!(error instanceof ZipEntryError)) throw error;
      throw new InputError(`${label}: entry ${shown} cannot be read (${error.message}); rebuild the zip`);
    }
  }
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
