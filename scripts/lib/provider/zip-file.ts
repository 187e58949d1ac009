import { createHash } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, createInflateRaw } from 'node:zlib';
import { InputError } from '../../../src/protocol/index';
import { ZipEntryError, type ZipSource } from '../../../src/protocol/zip-reader';
import type { ZipEntry } from '../../../src/protocol/zip';

/**
 * A zip file on disk as src/protocol/zip-reader.ts reads it (the same
 * reader the Worker runs on R2), in Node: ranged reads of the file, and each
 * entry inflated by node:zlib and hashed by node:crypto, its size and CRC-32
 * checked. Every byte read also passes a tap that feeds the whole file's
 * SHA-256 (`zh:`) while reads continue where the last one stopped: the
 * reader goes front to back through the entries, small gaps (local headers'
 * names, data descriptors) are read directly, and what is left (the central
 * directory) is hashed by sha256Hex(). So the file is read once, 1 MB at a
 * time, whatever its size.
 */

export interface ZipFile extends ZipSource {
  /** Hex SHA-256 of the whole file, the bytes not read yet read now; call once, after the reading. */
  sha256Hex(): Promise<string>;
  close(): Promise<void>;
}

export interface ProgressSink {
  /** Called with bytes of the archive processed so far (monotonic), at most every few MB. */
  (processedBytes: number, totalBytes: number): void;
}

/** Largest gap before a read that is read and hashed directly rather than left for the final pass. */
const GAP_LIMIT = 1 << 20;
const READ_CHUNK = 1 << 20;

/**
 * Opens the zip at `path` as a ZipFile. Throws InputError naming `label`
 * when it cannot be opened; its reads throw InputError when the file
 * shrinks or changes while being read.
 */
export async function openZipFile(path: string, label: string, onProgress?: ProgressSink): Promise<ZipFile> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new InputError(`${label}: cannot be opened (${(error as Error).message})`);
  }
  try {
    return new NodeZipFile(handle, (await handle.stat()).size, label, onProgress);
  } catch (error) {
    await handle.close();
    throw error;
  }
}

class NodeZipFile implements ZipFile {
  private readonly whole = createHash('sha256');
  /** The whole-file hash has seen bytes [0, hashedUpTo). */
  private hashedUpTo = 0;
  private lastReported = 0;

  constructor(
    private readonly handle: FileHandle,
    readonly size: number,
    private readonly label: string,
    private readonly onProgress?: ProgressSink,
  ) {}

  async read(offset: number, length: number): Promise<Uint8Array> {
    const gap = offset - this.hashedUpTo;
    if (gap > 0 && gap <= GAP_LIMIT) this.tap(this.hashedUpTo, await this.readExactly(this.hashedUpTo, gap));
    const bytes = await this.readExactly(offset, length);
    this.tap(offset, bytes);
    return bytes;
  }

  async entrySha256(entry: ZipEntry, dataOffset: number): Promise<string> {
    const hash = createHash('sha256');
    let crc = 0;
    let size = 0;
    const take = (chunk: Uint8Array) => {
      size += chunk.length;
      // Stops a deflate bomb early instead of inflating all of it.
      if (size > entry.uncompressedSize) throw new ZipEntryError(`it inflates to more than the ${entry.uncompressedSize} bytes the zip says`);
      hash.update(chunk);
      crc = crc32(chunk, crc);
    };
    const compressed = this.chunks(dataOffset, entry.compressedSize);
    try {
      if (entry.method === 8) {
        // Larger output chunks than zlib's default 16 KB make far fewer stream hops.
        await pipeline(Readable.from(compressed), createInflateRaw({ chunkSize: READ_CHUNK }), async (inflated: AsyncIterable<Buffer>) => {
          for await (const chunk of inflated) take(chunk);
        });
      } else {
        for await (const chunk of compressed) take(chunk);
      }
    } catch (error) {
      if (error instanceof InputError || error instanceof ZipEntryError) throw error;
      throw new ZipEntryError(`it does not inflate: ${(error as Error).message}`);
    }
    if (size !== entry.uncompressedSize) {
      throw new ZipEntryError(`uncompressed size is ${size} bytes, the zip says ${entry.uncompressedSize}`);
    }
    if (crc >>> 0 !== entry.crc32 >>> 0) {
      throw new ZipEntryError(`CRC-32 mismatch (stored ${hex8(entry.crc32)}, computed ${hex8(crc)})`);
    }
    return hash.digest('hex');
  }

  async sha256Hex(): Promise<string> {
    for (let at = this.hashedUpTo; at < this.size; at += READ_CHUNK) {
      this.tap(at, await this.readExactly(at, Math.min(READ_CHUNK, this.size - at)));
    }
    // The size was taken when the file was opened: a file that grew since is not the one read.
    if ((await this.handle.stat()).size !== this.size) throw this.changed();
    return this.whole.digest('hex');
  }

  close(): Promise<void> {
    return this.handle.close();
  }

  /** Bytes [offset, offset + length), READ_CHUNK at a time. */
  private async *chunks(offset: number, length: number): AsyncGenerator<Uint8Array> {
    for (let at = offset; at < offset + length; at += READ_CHUNK) yield await this.read(at, Math.min(READ_CHUNK, offset + length - at));
  }

  private async readExactly(offset: number, length: number): Promise<Buffer> {
    const buffer = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.handle.read(buffer, done, length - done, offset + done);
      if (bytesRead === 0) throw this.changed();
      done += bytesRead;
    }
    return buffer;
  }

  /** Bytes [offset, offset + chunk.length) were read: the whole-file hash takes what continues it. */
  private tap(offset: number, chunk: Uint8Array): void {
    const end = offset + chunk.length;
    if (offset > this.hashedUpTo || end <= this.hashedUpTo) return;
    this.whole.update(chunk.subarray(this.hashedUpTo - offset));
    this.hashedUpTo = end;
    if (this.onProgress && (end - this.lastReported >= 8 * READ_CHUNK || end === this.size)) {
      this.lastReported = end;
      this.onProgress(end, this.size);
    }
  }

  private changed(): InputError {
    return new InputError(`${this.label}: changed while being read (its size is no longer ${this.size} bytes); run again once it is written`);
  }
}

const hex8 = (n: number) => (n >>> 0).toString(16).padStart(8, '0');
