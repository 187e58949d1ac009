import { concatBytes } from '../../../src/bytes';

/**
 * Splits a stream into chunks of exactly `size` bytes (the last may be
 * shorter), each its own buffer — never a view on a larger one, since the
 * local R2 binding would send the whole underlying buffer. Used for local
 * uploads and for R2 multipart parts, which must all be the same size.
 */
export async function* fixedParts(stream: ReadableStream<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let piece = value;
      while (pendingBytes + piece.byteLength >= size) {
        const take = size - pendingBytes;
        pending.push(piece.subarray(0, take));
        yield concatBytes(pending, size);
        pending = [];
        pendingBytes = 0;
        piece = piece.subarray(take);
      }
      if (piece.byteLength > 0) {
        pending.push(piece);
        pendingBytes += piece.byteLength;
      }
    }
    if (pendingBytes > 0) yield concatBytes(pending, pendingBytes);
  } finally {
    reader.releaseLock();
  }
}
