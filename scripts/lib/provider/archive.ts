import { isUtf8 } from 'node:buffer';
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, fstatSync, openSync, closeSync, readSync } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import yauzl from 'yauzl';
import { h1Hash, InputError, type ZipEntryDigest } from '../../../src/protocol/index';

/**
 * Reading a provider package (zip): its SHA-256 (`zh:`), Go's dirhash Hash1
 * over its entries (`h1:`) and the entry names, in one sequential pass over
 * the file.
 *
 * yauzl reads the central directory (at the end of the file), then this
 * module opens the entries in the order they are stored. Every byte yauzl
 * reads for an entry passes a tap that feeds the archive's SHA-256 when it
 * continues where the previous read stopped; small gaps (local headers' name
 * and extra fields, data descriptors) are read directly, and whatever is
 * left at the end (the central directory) is hashed last. So a large archive
 * is read from disk once, and each entry's inflated bytes are hashed for h1 as
 * they come out of zlib.
 */

export interface ArchiveEntry {
  /** Name as stored (UTF-8). */
  name: string;
  /** Uncompressed size. */
  size: number;
  /** Unix mode bits when the zip was made on Unix, else null. */
  unixMode: number | null;
  isDirectory: boolean;
}

export interface ArchiveDigest {
  path: string;
  /** Size of the zip in bytes. */
  size: number;
  /** Hex SHA-256 of the zip (`zh:` without the prefix; the registry's `shasum`). */
  sha256Hex: string;
  /** Go dirhash Hash1 of the zip's entries, "h1:…". */
  h1: string;
  entries: ArchiveEntry[];
}

export interface ProgressSink {
  /** Called with bytes of the archive processed so far (monotonic), at most every few MB. */
  (processedBytes: number, totalBytes: number): void;
}

/** Largest gap between two reads filled directly rather than left for the final pass. */
const GAP_LIMIT = 1 << 20;
const READ_CHUNK = 1 << 20;

/**
 * Reads the zip at `path` once and returns its digests and entries. Throws
 * InputError naming the file when it is not a readable zip: bad structure,
 * unsupported compression or encryption, an entry name that is not UTF-8,
 * absolute or containing "..", a duplicate entry, or a CRC-32 mismatch
 * (Go's archive/zip, which Terraform uses, refuses those too).
 */
export async function inspectArchive(path: string, onProgress?: ProgressSink): Promise<ArchiveDigest> {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    throw new InputError(`archive ${path}: cannot be opened (${(error as Error).message})`);
  }
  try {
    const size = fstatSync(fd).size;
    const tracker = new SequentialHasher(fd, size, onProgress);
    const reader = new TappedReader(fd, tracker);
    let zip: yauzl.ZipFile;
    try {
      zip = await openZip(reader, size);
    } catch (error) {
      throw new InputError(`archive ${path}: not a readable zip file (${(error as Error).message}); rebuild it (goreleaser, or --binary OS_ARCH=PATH)`);
    }
    try {
      const rawEntries = await readAllEntries(zip);
      const entries: ArchiveEntry[] = [];
      const digests: ZipEntryDigest[] = [];
      const seen = new Set<string>();
      for (const entry of rawEntries) {
        const name = entryName(path, entry);
        if (seen.has(name)) throw new InputError(`archive ${path}: entry ${JSON.stringify(name)} is stored twice; rebuild the zip`);
        seen.add(name);
      }
      const inOrder = [...rawEntries].sort((a, b) => a.relativeOffsetOfLocalHeader - b.relativeOffsetOfLocalHeader);
      for (const entry of inOrder) {
        const name = entryName(path, entry);
        let sha256Hex: string;
        try {
          sha256Hex = await hashEntry(zip, entry);
        } catch (error) {
          throw new InputError(`archive ${path}: entry ${JSON.stringify(name)} cannot be read (${(error as Error).message}); rebuild the zip`);
        }
        digests.push({ name, sha256Hex });
        const madeBy = entry.versionMadeBy >> 8;
        entries.push({
          name,
          size: entry.uncompressedSize,
          unixMode: madeBy === 3 ? (entry.externalFileAttributes >>> 16) & 0o7777 : null,
          isDirectory: name.endsWith('/'),
        });
      }
      const sha256Hex = await tracker.finish();
      let h1: string;
      try {
        h1 = h1Hash(digests);
      } catch (error) {
        throw new InputError(`archive ${path}: ${(error as Error).message}`);
      }
      return { path, size, sha256Hex, h1, entries: entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
    } finally {
      zip.close();
    }
  } finally {
    closeSync(fd);
  }
}

/** Streams a file through node:crypto's SHA-256; returns hex digest and size. */
export async function sha256File(path: string): Promise<{ sha256Hex: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: READ_CHUNK }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha256Hex: hash.digest('hex'), size };
}

function entryName(path: string, entry: yauzl.Entry): string {
  const raw = entry.fileName as unknown as Buffer;
  if (!isUtf8(raw)) {
    throw new InputError(`archive ${path}: entry name ${JSON.stringify(raw.toString('latin1'))} is not UTF-8; rebuild the zip`);
  }
  const name = raw.toString('utf8');
  const problem = yauzl.validateFileName(name);
  if (problem !== null) throw new InputError(`archive ${path}: unsafe entry name (${problem}); rebuild the zip`);
  return name;
}

function openZip(reader: yauzl.RandomAccessReader, size: number): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.fromRandomAccessReader(reader, size, { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true }, (error, zip) =>
      error ? reject(error) : resolve(zip),
    );
  });
}

function readAllEntries(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = [];
    zip.on('entry', (entry: yauzl.Entry) => {
      entries.push(entry);
      zip.readEntry();
    });
    zip.once('end', () => resolve(entries));
    zip.once('error', reject);
    zip.readEntry();
  });
}

async function hashEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<string> {
  // Inflate here rather than in yauzl: larger output chunks make far fewer stream hops.
  const compressed = entry.isCompressed();
  const raw = await new Promise<Readable>((resolve, reject) =>
    zip.openReadStream(entry, compressed ? ({ decompress: false } as yauzl.ZipFileOptions) : ({} as yauzl.ZipFileOptions), (error, s) =>
      error ? reject(error) : resolve(s),
    ),
  );
  let stream: Readable = raw;
  if (compressed) {
    const inflate = zlib.createInflateRaw({ chunkSize: READ_CHUNK });
    raw.on('error', (error) => inflate.destroy(error));
    stream = raw.pipe(inflate);
  }
  const hash = createHash('sha256');
  const crc32 = (zlib as unknown as { crc32?: (data: Buffer, value?: number) => number }).crc32;
  let crc = 0;
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
    if (crc32) crc = crc32(chunk, crc);
  }
  if (size !== entry.uncompressedSize) {
    throw new Error(`uncompressed size is ${size} bytes, the zip says ${entry.uncompressedSize}`);
  }
  if (crc32 && crc >>> 0 !== entry.crc32 >>> 0) {
    throw new Error(`CRC-32 mismatch (stored ${hex8(entry.crc32)}, computed ${hex8(crc)})`);
  }
  return hash.digest('hex');
}

const hex8 = (n: number) => (n >>> 0).toString(16).padStart(8, '0');

/**
 * Hashes a file from the bytes others read, as long as they read it in
 * order; finish() hashes whatever was not seen and returns the digest.
 */
class SequentialHasher {
  private readonly hash: Hash = createHash('sha256');
  private hashedUpTo = 0;
  private lastReported = 0;

  constructor(
    private readonly fd: number,
    private readonly size: number,
    private readonly onProgress?: ProgressSink,
  ) {}

  /** Bytes [offset, offset+chunk.length) were read by someone. */
  feed(offset: number, chunk: Buffer): void {
    const end = offset + chunk.length;
    if (offset > this.hashedUpTo || end <= this.hashedUpTo) return;
    this.hash.update(chunk.subarray(this.hashedUpTo - offset));
    this.advance(end);
  }

  /** A read is about to start at `offset`: fill a small gap before it directly. */
  beforeRead(offset: number): void {
    const gap = offset - this.hashedUpTo;
    if (gap <= 0 || gap > GAP_LIMIT) return;
    const buffer = Buffer.allocUnsafe(gap);
    let done = 0;
    while (done < gap) {
      const n = readSync(this.fd, buffer, done, gap - done, this.hashedUpTo + done);
      if (n === 0) break;
      done += n;
    }
    this.feed(this.hashedUpTo, buffer.subarray(0, done));
  }

  async finish(): Promise<string> {
    if (this.hashedUpTo < this.size) {
      const rest = createReadStream('', { fd: this.fd, start: this.hashedUpTo, autoClose: false, highWaterMark: READ_CHUNK });
      let position = this.hashedUpTo;
      for await (const chunk of rest as AsyncIterable<Buffer>) {
        this.feed(position, chunk);
        position += chunk.length;
      }
    }
    if (this.hashedUpTo !== this.size) throw new Error(`file changed while being read (read ${this.hashedUpTo} of ${this.size} bytes)`);
    return this.hash.digest('hex');
  }

  private advance(to: number): void {
    this.hashedUpTo = to;
    if (this.onProgress && (to - this.lastReported >= 8 * READ_CHUNK || to === this.size)) {
      this.lastReported = to;
      this.onProgress(to, this.size);
    }
  }
}

/** yauzl's view of the file: ranges read with fs streams, each passing the hasher's tap. */
class TappedReader extends yauzl.RandomAccessReader {
  constructor(
    private readonly fd: number,
    private readonly tracker: SequentialHasher,
  ) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    this.tracker.beforeRead(start);
    const source = createReadStream('', { fd: this.fd, start, end: end - 1, autoClose: false, highWaterMark: READ_CHUNK });
    let position = start;
    const tracker = this.tracker;
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        tracker.feed(position, chunk);
        position += chunk.length;
        callback(null, chunk);
      },
    });
    source.on('error', (error) => tap.destroy(error));
    return source.pipe(tap);
  }
}
