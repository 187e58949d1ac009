import { InputError } from './errors';

/**
 * Reading a zip's structure from its end: the End Of Central Directory
 * record and the central directory, so a server can list a stored archive's
 * entries with one ranged read of its tail instead of reading it whole
 * (APPNOTE.TXT 4.3.12 and 4.3.16). ZIP64 archives (over 4 GiB or 65,535
 * entries) are refused: no provider package comes near that.
 */

export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated. */
  method: number;
  compressedSize: number;
  uncompressedSize: number;
  /** Offset of the entry's local file header. */
  localHeaderOffset: number;
  /** True for a directory entry (name ends with "/"). */
  isDirectory: boolean;
}

export interface ZipDirectory {
  /** Offset and size of the central directory inside the archive. */
  offset: number;
  size: number;
  entries: ZipEntry[];
}

const EOCD_SIGNATURE = 0x06054b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
/** The EOCD record is 22 bytes plus a comment of up to 65,535 bytes. */
export const ZIP_TAIL_BYTES = 22 + 0xffff;
export const LOCAL_HEADER_BYTES = 30;

/**
 * Finds the central directory from the last bytes of an archive (`tail`,
 * up to ZIP_TAIL_BYTES, of an archive of `size` bytes). Returns its offset
 * and size. Throws InputError (naming `label`) when there is no EOCD record,
 * it is ZIP64, or it points outside the archive.
 */
export function locateCentralDirectory(tail: Uint8Array, size: number, label: string): { offset: number; size: number; count: number } {
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  for (let i = tail.byteLength - 22; i >= 0; i--) {
    if (view.getUint32(i, true) !== EOCD_SIGNATURE) continue;
    const count = view.getUint16(i + 10, true);
    const cdSize = view.getUint32(i + 12, true);
    const cdOffset = view.getUint32(i + 16, true);
    if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      throw new InputError(`${label}: a ZIP64 archive; provider packages must be plain zip files (under 4 GiB, under 65,535 entries)`);
    }
    if (cdOffset + cdSize > size) throw new InputError(`${label}: not a readable zip file (its central directory lies outside the file); rebuild it`);
    return { offset: cdOffset, size: cdSize, count };
  }
  throw new InputError(`${label}: not a zip file (no end of central directory record); rebuild it`);
}

/**
 * Parses a central directory (`bytes`, exactly as located). Throws
 * InputError for a malformed directory, an entry name that is not UTF-8,
 * absolute or with "..", an entry stored twice, encryption, or a compression
 * method other than stored or deflate (as the CLI's validation does).
 */
export function parseCentralDirectory(bytes: Uint8Array, count: number, archiveSize: number, label: string): ZipEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const entries: ZipEntry[] = [];
  const seen = new Set<string>();
  let at = 0;
  for (let n = 0; n < count; n++) {
    if (at + 46 > bytes.byteLength || view.getUint32(at, true) !== CENTRAL_SIGNATURE) {
      throw new InputError(`${label}: not a readable zip file (central directory entry ${n + 1} is damaged); rebuild it`);
    }
    const flags = view.getUint16(at + 8, true);
    const method = view.getUint16(at + 10, true);
    const compressedSize = view.getUint32(at + 20, true);
    const uncompressedSize = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    const localHeaderOffset = view.getUint32(at + 42, true);
    if (at + 46 + nameLength > bytes.byteLength) throw new InputError(`${label}: not a readable zip file (an entry name runs past the directory); rebuild it`);
    let name: string;
    try {
      name = decoder.decode(bytes.subarray(at + 46, at + 46 + nameLength));
    } catch {
      throw new InputError(`${label}: entry ${n + 1} has a name that is not UTF-8; rebuild the zip`);
    }
    const shown = JSON.stringify(name);
    if (flags & 0x1) throw new InputError(`${label}: entry ${shown} is encrypted; provider packages cannot be`);
    if (method !== 0 && method !== 8)
      throw new InputError(`${label}: entry ${shown} uses compression method ${method}; only stored and deflate are read by Terraform`);
    if (name.startsWith('/') || name.split(/[\\/]/).includes('..'))
      throw new InputError(`${label}: entry ${shown} is absolute or has a ".." segment; rebuild the zip`);
    if (seen.has(name)) throw new InputError(`${label}: entry ${shown} is stored twice; rebuild the zip`);
    if (compressedSize === 0xffffffff || uncompressedSize === 0xffffffff || localHeaderOffset === 0xffffffff) {
      throw new InputError(`${label}: entry ${shown} needs ZIP64; provider packages must be plain zip files`);
    }
    if (localHeaderOffset + LOCAL_HEADER_BYTES + compressedSize > archiveSize)
      throw new InputError(`${label}: entry ${shown} lies outside the file; rebuild the zip`);
    seen.add(name);
    entries.push({ name, method, compressedSize, uncompressedSize, localHeaderOffset, isDirectory: name.endsWith('/') });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/**
 * The offset of an entry's data: after its local header (`header`, its
 * first 30 bytes), whose name and extra field lengths may differ from the
 * central directory's. Throws InputError when the header is damaged.
 */
export function entryDataOffset(header: Uint8Array, entry: ZipEntry, label: string): number {
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  if (header.byteLength < LOCAL_HEADER_BYTES || view.getUint32(0, true) !== LOCAL_SIGNATURE) {
    throw new InputError(`${label}: entry ${JSON.stringify(entry.name)} has a damaged local header; rebuild the zip`);
  }
  return entry.localHeaderOffset + LOCAL_HEADER_BYTES + view.getUint16(26, true) + view.getUint16(28, true);
}
