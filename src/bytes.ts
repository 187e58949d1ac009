/**
 * Joining byte chunks into one new buffer: the one copy the Worker (stream
 * readers, the verified copy's blocks, tar headers) and the scripts (upload
 * parts) share.
 */

/**
 * One new buffer holding `chunks` in order, never a view on any of them.
 * `length` (their total size) may be given when the caller already counted it.
 */
export function concatBytes(chunks: readonly Uint8Array[], length = chunks.reduce((n, c) => n + c.byteLength, 0)): Uint8Array {
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
