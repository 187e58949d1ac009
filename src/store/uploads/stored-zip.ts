import { bytesStream } from '../../bytes';
import { inflatedEntry, ZipEntryError, type ZipContentSource, type ZipSource } from '../../protocol/zip-reader';
import type { ZipEntry } from '../../protocol/zip';

/**
 * A zip stored in R2 as src/protocol/zip-reader.ts reads it (the publish
 * API's check of an uploaded provider package, the pull-through's of an
 * upstream one): ranged reads, and each entry's compressed bytes streamed by
 * range through the runtime's DecompressionStream and crypto.DigestStream
 * (native code: the Worker's own CPU time is the JS between chunks). Cost per
 * archive: 2 + 2 × entries R2 reads, and inflating and hashing every entry
 * once (the uncompressed size, e.g. ~60 MB for a 25 MB provider zip).
 * A module zip, whose entries are checked but not hashed, is read through
 * streamedZip instead: one R2 stream for all its entries (the subrequest
 * limit is per request, and a module may hold hundreds of files).
 */

/** The parts of the R2 binding used here (ranged reads). */
export interface RangeReader {
  get(
    key: string,
    options: { range: { offset: number; length: number } },
  ): Promise<{ body: ReadableStream<Uint8Array>; arrayBuffer(): Promise<ArrayBuffer> } | null>;
}

/**
 * The object `key` (`size` bytes) of `bucket` as a ZipSource. Its reads
 * throw a plain Error when the object vanished; entrySha256 rejects with
 * ZipEntryError when an entry does not inflate to its recorded size (no
 * CRC-32 check: workerd has no native one, and one in JS would cost the
 * Worker's CPU time per byte).
 */
export function storedZip(bucket: RangeReader, key: string, size: number): ZipSource {
  return {
    size,
    read: (offset, length) => rangedRead(bucket, key, offset, length),
    entrySha256: (entry, offset) => entrySha256(bucket, key, entry, offset),
  };
}

/**
 * Ranged reads from memory for the objects in `held` (their bytes by key: a commit's small staged files, read
 * once), from `bucket` for any other. Reads from memory are views handed on as one chunk (bytesStream).
 */
export function heldRangeReader(bucket: RangeReader, held: ReadonlyMap<string, Uint8Array>): RangeReader {
  return {
    async get(key, options) {
      const bytes = held.get(key);
      if (!bytes) return bucket.get(key, options);
      const { offset, length } = options.range;
      const slice = bytes.subarray(offset, offset + length);
      return { body: bytesStream(slice), arrayBuffer: async () => slice.slice().buffer };
    },
  };
}

/** Bytes [offset, offset + length) of `key`, one ranged R2 read; a plain Error when the object vanished. */
async function rangedRead(bucket: RangeReader, key: string, offset: number, length: number): Promise<Uint8Array> {
  if (length === 0) return new Uint8Array(0);
  const object = await bucket.get(key, { range: { offset, length } });
  if (object === null) throw new Error(`${key} disappeared while being read`);
  return new Uint8Array(await object.arrayBuffer());
}

async function entrySha256(bucket: RangeReader, key: string, entry: ZipEntry, offset: number): Promise<string> {
  const digest = new crypto.DigestStream('SHA-256');
  digest.digest.catch(() => {}); // rejects when the pipe fails, which is reported below
  let source: ReadableStream<Uint8Array>;
  if (entry.compressedSize === 0) {
    source = bytesStream(new Uint8Array(0));
  } else {
    const object = await bucket.get(key, { range: { offset, length: entry.compressedSize } });
    if (object === null) throw new Error(`${key} disappeared while being read`);
    source = object.body;
  }
  // So a stored entry's bytes go straight into the digest (the reader checked their count). A deflated one goes
  // through a FixedLengthStream (native), which errors when it inflates to more or fewer bytes than its header says:
  // either way no JS runs per chunk (a counting TransformStream cost up to 1.3× the floor; a FixedLengthStream on
  // stored bytes, 3.8×).
  try {
    if (entry.method === 8) {
      await source.pipeThrough(new DecompressionStream('deflate-raw')).pipeThrough(new FixedLengthStream(entry.uncompressedSize)).pipeTo(digest);
    } else {
      await source.pipeTo(digest);
    }
  } catch (error) {
    throw new ZipEntryError(
      `does not inflate to the ${entry.uncompressedSize} bytes its header says: ${String((error as Error)?.message ?? error).slice(0, 120)}`,
    );
  }
  return [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** A ZipContentSource read front to back; `close` ends its stream (call it when done, read or not). */
export interface StreamedZip extends ZipContentSource {
  close(): Promise<void>;
}

/**
 * The object `key` (`size` bytes) of `bucket` as a ZipContentSource read
 * front to back through ONE ranged R2 stream, opened at the first read and
 * running to the end of the object: the zip reader reads local headers and
 * entry data in stored order, so each read skips forward to its offset and
 * copies only the bytes asked for (file data skipped is dropped chunk by
 * chunk, never held). A read behind the stream's position (the reader never
 * asks for one) falls back to one ranged read. Cost for a zip of N entries:
 * 1 R2 subrequest whatever N (plus readZipDirectory's 1–2 on a storedZip),
 * memory the stream's current chunk plus the bytes asked for. Deflated
 * entries are inflated by DecompressionStream to at most their recorded size.
 * Reads throw a plain Error when the object vanished or ends early.
 */
export function streamedZip(bucket: RangeReader, key: string, size: number): StreamedZip {
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  let position = 0; // offset of pending[0] in the object
  let pending: Uint8Array = new Uint8Array(0); // bytes read from the stream, not yet consumed
  const read = async (offset: number, length: number): Promise<Uint8Array> => {
    if (length === 0) return new Uint8Array(0);
    if (offset + length > size) throw new Error(`bytes ${offset}..${offset + length} lie outside ${key} (${size} bytes)`);
    if (reader === null) {
      const object = await bucket.get(key, { range: { offset, length: size - offset } });
      if (object === null) throw new Error(`${key} disappeared while being read`);
      reader = object.body.getReader();
      position = offset;
    }
    if (offset < position) return rangedRead(bucket, key, offset, length);
    const out = new Uint8Array(length);
    let filled = 0;
    while (filled < length) {
      if (pending.byteLength === 0) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`${key} ended at byte ${position}, before byte ${offset + length}`);
        pending = value;
      }
      // Skip to `offset`, then copy what the chunk holds of [offset, offset + length).
      const skip = Math.min(pending.byteLength, Math.max(0, offset - position));
      const take = Math.min(pending.byteLength - skip, length - filled);
      out.set(pending.subarray(skip, skip + take), filled);
      filled += take;
      pending = pending.subarray(skip + take);
      position += skip + take;
    }
    return out;
  };
  return {
    size,
    read,
    entryBytes: async (entry, dataOffset) => inflatedEntry(await read(dataOffset, entry.compressedSize), entry, workerInflateRaw),
    async close() {
      await reader?.cancel().catch(() => {});
    },
  };
}

/** DecompressionStream (native) as the zip reader's inflater: it stops one byte past `maxBytes`, enough for the reader to see the size is wrong. */
async function workerInflateRaw(compressed: Uint8Array, maxBytes: number): Promise<Uint8Array> {
  const reader = bytesStream(compressed).pipeThrough(new DecompressionStream('deflate-raw')).getReader();
  const out = new Uint8Array(maxBytes + 1);
  let filled = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return out.subarray(0, filled);
      const take = Math.min(value.byteLength, out.byteLength - filled);
      out.set(value.subarray(0, take), filled);
      filled += take;
      if (filled === out.byteLength) return out;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
