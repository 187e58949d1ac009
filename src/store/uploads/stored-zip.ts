import { ZipEntryError, type ZipSource } from '../../protocol/zip-reader';
import type { ZipEntry } from '../../protocol/zip';

/**
 * A zip stored in R2 as src/protocol/zip-reader.ts reads it (the publish
 * API's check of an uploaded provider package, the pull-through's of an
 * upstream one): ranged reads, and each entry's compressed bytes streamed by
 * range through the runtime's DecompressionStream and crypto.DigestStream
 * (native code: the Worker's own CPU time is the JS between chunks). Cost per
 * archive: 2 + 2 × entries R2 reads, and inflating and hashing every entry
 * once (the uncompressed size, e.g. ~60 MB for a 25 MB provider zip).
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
    async read(offset, length) {
      if (length === 0) return new Uint8Array(0);
      const object = await bucket.get(key, { range: { offset, length } });
      if (object === null) throw new Error(`${key} disappeared while being read`);
      return new Uint8Array(await object.arrayBuffer());
    },
    entrySha256: (entry, offset) => entrySha256(bucket, key, entry, offset),
  };
}

async function entrySha256(bucket: RangeReader, key: string, entry: ZipEntry, offset: number): Promise<string> {
  const digest = new crypto.DigestStream('SHA-256');
  digest.digest.catch(() => {}); // rejects when the pipe fails, which is reported below
  let source: ReadableStream<Uint8Array>;
  if (entry.compressedSize === 0) {
    source = new Response(new Uint8Array(0)).body!;
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
