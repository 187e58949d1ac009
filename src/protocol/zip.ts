import { InputError } from './errors';

/**
 * Reading a zip's structure from its end: the End Of Central Directory
 * record and the central directory, so a server can list a stored archive's
 * entries with one ranged read of its tail instead of reading it whole
 * (APPNOTE.TXT 4.3.12 and 4.3.16). ZIP64 archives (over 4 GiB or 65,535
 * entries) are refused: no provider or module package comes near that.
 */

/** What a zip is read as: messages name it, and provider packages' entry names are held to more rules (see zip-reader.ts). */
export type ZipKind = 'provider' | 'module';

export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated. */
  method: number;
  compressedSize: number;
  uncompressedSize: number;
  /** CRC-32 of the uncompressed bytes, as the central directory records it. */
  crc32: number;
  /** Offset of the entry's local file header. */
  localHeaderOffset: number;
  /** True for a directory entry (name ends with "/"). */
  isDirectory: boolean;
  /** Unix mode bits (permissions) when the zip was made on Unix, else null. */
  unixMode: number | null;
  /** The external attributes as recorded, whatever system made the zip (a module zip's symlinks are read from them). */
  externalAttributes: number;
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
 * bytes follow its comment, it is ZIP64 or split over disks, or it points
 * outside the archive. `kind` is what messages call it.
 */
export function locateCentralDirectory(
  tail: Uint8Array,
  size: number,
  label: string,
  kind: ZipKind = 'provider',
): { offset: number; size: number; count: number } {
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  for (let i = tail.byteLength - 22; i >= 0; i--) {
    if (view.getUint32(i, true) !== EOCD_SIGNATURE) continue;
    // The comment runs to the end of the file: anything after it is a damaged or appended-to file, or a
    // signature inside a comment (yauzl, the CLI's reader until issue 28, refused these too).
    const commentLength = view.getUint16(i + 20, true);
    if (i + 22 + commentLength !== tail.byteLength) {
      throw new InputError(
        `${label}: not a readable zip file (${tail.byteLength - i - 22 - commentLength} bytes after its end of central directory record); rebuild it`,
      );
    }
    if (view.getUint16(i + 4, true) !== 0 || view.getUint16(i + 6, true) !== 0)
      throw new InputError(`${label}: not a readable zip file (split over several disks); rebuild it as one file`);
    const count = view.getUint16(i + 10, true);
    const cdSize = view.getUint32(i + 12, true);
    const cdOffset = view.getUint32(i + 16, true);
    if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      throw new InputError(`${label}: a ZIP64 archive; ${kind} packages must be plain zip files (under 4 GiB, under 65,535 entries)`);
    }
    if (cdOffset + cdSize > size) throw new InputError(`${label}: not a readable zip file (its central directory lies outside the file); rebuild it`);
    return { offset: cdOffset, size: cdSize, count };
  }
  throw new InputError(`${label}: not a readable zip file (no end of central directory record); rebuild it`);
}

/**
 * Parses a central directory (`bytes`, exactly as located). Throws
 * InputError for a malformed directory (an entry's header or extra field
 * running past it), an entry name that is not UTF-8, absolute or with "..",
 * an entry stored twice, encryption, or a compression method other than
 * stored or deflate. `kind` is what messages call it.
 */
export function parseCentralDirectory(bytes: Uint8Array, count: number, archiveSize: number, label: string, kind: ZipKind = 'provider'): ZipEntry[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const entries: ZipEntry[] = [];
  const seen = new Set<string>();
  let at = 0;
  for (let n = 0; n < count; n++) {
    if (at + 46 > bytes.byteLength || view.getUint32(at, true) !== CENTRAL_SIGNATURE) {
      throw new InputError(`${label}: not a readable zip file (central directory entry ${n + 1} is damaged); rebuild it`);
    }
    const madeBy = view.getUint16(at + 4, true) >> 8;
    const flags = view.getUint16(at + 8, true);
    const method = view.getUint16(at + 10, true);
    const crc32 = view.getUint32(at + 16, true);
    const compressedSize = view.getUint32(at + 20, true);
    const uncompressedSize = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    const externalAttributes = view.getUint32(at + 38, true);
    const localHeaderOffset = view.getUint32(at + 42, true);
    if (at + 46 + nameLength + extraLength + commentLength > bytes.byteLength)
      throw new InputError(`${label}: not a readable zip file (central directory entry ${n + 1} runs past the directory); rebuild it`);
    if (!wellFormedExtraField(bytes.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength)))
      throw new InputError(`${label}: not a readable zip file (central directory entry ${n + 1} has a damaged extra field); rebuild it`);
    let name: string;
    try {
      name = decoder.decode(bytes.subarray(at + 46, at + 46 + nameLength));
    } catch {
      throw new InputError(`${label}: entry ${n + 1} has a name that is not UTF-8; rebuild the zip`);
    }
    const shown = JSON.stringify(name);
    // 0x40: strong encryption, which sets 0x1 too in a well-formed zip.
    if (flags & 0x41) throw new InputError(`${label}: entry ${shown} is encrypted; ${kind} packages cannot be`);
    if (method !== 0 && method !== 8)
      throw new InputError(`${label}: entry ${shown} uses compression method ${method}; only stored and deflate are read by Terraform`);
    if (name.startsWith('/')) throw new InputError(`${label}: unsafe entry name (absolute path: ${shown}); rebuild the zip`);
    if (name.split(/[\\/]/).includes('..')) throw new InputError(`${label}: unsafe entry name (a ".." segment: ${shown}); rebuild the zip`);
    if (seen.has(name)) throw new InputError(`${label}: entry ${shown} is stored twice; rebuild the zip`);
    if (compressedSize === 0xffffffff || uncompressedSize === 0xffffffff || localHeaderOffset === 0xffffffff) {
      throw new InputError(`${label}: entry ${shown} needs ZIP64; ${kind} packages must be plain zip files`);
    }
    if (localHeaderOffset + LOCAL_HEADER_BYTES + compressedSize > archiveSize)
      throw new InputError(`${label}: entry ${shown} lies outside the file; rebuild the zip`);
    seen.add(name);
    entries.push({
      name,
      method,
      compressedSize,
      uncompressedSize,
      crc32,
      localHeaderOffset,
      isDirectory: name.endsWith('/'),
      unixMode: madeBy === 3 ? (externalAttributes >>> 16) & 0o7777 : null,
      externalAttributes,
    });
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

/** True when an extra field is a sequence of (id, length, data) records that ends where the field does. */
function wellFormedExtraField(field: Uint8Array): boolean {
  const view = new DataView(field.buffer, field.byteOffset, field.byteLength);
  let at = 0;
  // As yauzl: fewer than 4 bytes left are padding, not a record.
  while (at + 4 <= field.byteLength) {
    at += 4 + view.getUint16(at + 2, true);
    if (at > field.byteLength) return false;
  }
  return true;
}
