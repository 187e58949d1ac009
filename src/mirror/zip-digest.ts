import { h1Hash, type ZipEntryDigest } from '../protocol/hashes';
import { UpstreamError } from './upstream-http';

/**
 * Go dirhash Hash1 (`h1:`) of a zip stored in R2, computed in the Worker:
 * the central directory is read from the object's tail, then each entry's
 * data (a ranged read) is inflated (DecompressionStream) and hashed
 * (crypto.DigestStream) — native code, never the whole archive in memory.
 * Directories count with empty contents, as in Go's dirhash.HashZip and
 * scripts/lib/provider/archive.ts. Only what Go's archive/zip writes for provider
 * packages is read: stored or deflated entries, no zip64 (archives < 4 GiB).
 */

export interface RangeReader {
  size: number;
  /** `length` bytes from `offset`, as a stream. */
  read(offset: number, length: number): Promise<ReadableStream<Uint8Array>>;
}

export interface ZipDigest {
  h1: string;
  /** Entry names in stored order. */
  names: string[];
  /** R2 reads made. */
  reads: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/** Throws UpstreamError naming `what` when the object is not a zip this reads. */
export async function zipDigest(reader: RangeReader, what: string): Promise<ZipDigest> {
  let reads = 0;
  const bytes = async (offset: number, length: number) => {
    reads++;
    return new Uint8Array(await new Response(await reader.read(offset, length)).arrayBuffer());
  };
  const fail = (why: string): never => {
    throw new UpstreamError(`archive check failed: ${what}: ${why}`);
  };
  const tailLength = Math.min(reader.size, 22 + 65535);
  const tail = await bytes(reader.size - tailLength, tailLength);
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  let eocd = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (view.getUint32(i, true) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) fail('not a zip file (no end of central directory)');
  const count = view.getUint16(eocd + 10, true);
  const cdSize = view.getUint32(eocd + 12, true);
  const cdOffset = view.getUint32(eocd + 16, true);
  if (count === 0xffff || cdOffset === 0xffffffff || cdSize === 0xffffffff) fail('zip64 archives are not read by the pull-through (mirror it with `npm run mirror -- sync`)');
  if (cdOffset + cdSize > reader.size) fail('the central directory lies outside the file');
  const cd = await bytes(cdOffset, cdSize);
  const cdView = new DataView(cd.buffer, cd.byteOffset, cd.byteLength);
  const entries: { name: string; method: number; compressed: number; offset: number }[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (at + 46 > cd.length || cdView.getUint32(at, true) !== CENTRAL) fail(`central directory entry ${i} is damaged`);
    const flags = cdView.getUint16(at + 8, true);
    const method = cdView.getUint16(at + 10, true);
    const compressed = cdView.getUint32(at + 20, true);
    const nameLength = cdView.getUint16(at + 28, true);
    const extraLength = cdView.getUint16(at + 30, true);
    const commentLength = cdView.getUint16(at + 32, true);
    const offset = cdView.getUint32(at + 42, true);
    let name: string;
    try {
      name = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(cd.subarray(at + 46, at + 46 + nameLength));
    } catch {
      name = fail(`entry ${i}'s name is not UTF-8`);
    }
    if (flags & 1) fail(`entry ${name} is encrypted`);
    if (method !== 0 && method !== 8) fail(`entry ${name} uses compression method ${method} (only stored and deflate are read)`);
    entries.push({ name, method, compressed, offset });
    at += 46 + nameLength + extraLength + commentLength;
  }
  if (new Set(entries.map((e) => e.name)).size !== entries.length) fail('an entry is stored twice');
  const digests: ZipEntryDigest[] = [];
  for (const entry of entries) {
    const header = await bytes(entry.offset, 30);
    const headerView = new DataView(header.buffer, header.byteOffset, header.byteLength);
    if (header.length < 30 || headerView.getUint32(0, true) !== LOCAL) fail(`entry ${entry.name}: damaged local header`);
    const dataOffset = entry.offset + 30 + headerView.getUint16(26, true) + headerView.getUint16(28, true);
    if (dataOffset + entry.compressed > reader.size) fail(`entry ${entry.name} runs past the end of the file`);
    let data: ReadableStream<Uint8Array>;
    if (entry.compressed === 0) {
      data = new Response(new Uint8Array()).body!;
    } else {
      reads++;
      data = await reader.read(dataOffset, entry.compressed);
    }
    if (entry.method === 8) data = data.pipeThrough(new DecompressionStream('deflate-raw') as unknown as TransformStream<Uint8Array, Uint8Array>);
    const digest = new crypto.DigestStream('SHA-256');
    try {
      await data.pipeTo(digest);
    } catch (error) {
      fail(`entry ${entry.name} cannot be inflated (${(error as Error).message})`);
    }
    digests.push({ name: entry.name, sha256Hex: hex(await digest.digest) });
  }
  return { h1: h1Hash(digests), names: entries.map((e) => e.name), reads };
}

export function hex(buffer: ArrayBuffer): string {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');
}
