import type { ProviderAddress } from '../../protocol/address';
import { releaseObjectKey } from '../layout';

/**
 * Storing a pulled archive whose size is not known in advance (an upstream
 * that sends no Content-Length): R2's put needs a length, so the stream goes
 * into an R2 multipart upload in parts of PART_BYTES (R2 wants every part but
 * the last of one size), and the object appears only when the upload is
 * completed — after the stream ended without error, i.e. after the verified
 * copy checked the SHA-256 (src/mirror/verified-copy.ts). A stream that
 * errors (a failed check, a stalled upstream, a stopped Worker) aborts the
 * upload: nothing is stored, and an upload left behind by a killed Worker
 * never becomes an object (R2 removes incomplete uploads after 7 days).
 */

export const PART_BYTES = 8 * 1024 * 1024;

/** Stores `body` under the archive's key, with its SHA-256 as metadata; rejects (having aborted the upload) when `body` errors. */
export async function storePulledArchiveInParts(
  bucket: R2Bucket,
  address: ProviderAddress,
  version: string,
  filename: string,
  body: ReadableStream<Uint8Array>,
  shasum: string,
): Promise<void> {
  const upload = await bucket.createMultipartUpload(releaseObjectKey(address, version, filename), {
    httpMetadata: { contentType: 'application/zip' },
    customMetadata: { sha256: shasum },
  });
  const parts: R2UploadedPart[] = [];
  const reader = body.getReader();
  let buffer = new Uint8Array(PART_BYTES);
  let filled = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let offset = 0;
      while (offset < value.byteLength) {
        const take = Math.min(PART_BYTES - filled, value.byteLength - offset);
        buffer.set(value.subarray(offset, offset + take), filled);
        filled += take;
        offset += take;
        if (filled === PART_BYTES) {
          parts.push(await upload.uploadPart(parts.length + 1, buffer));
          buffer = new Uint8Array(PART_BYTES);
          filled = 0;
        }
      }
    }
    if (filled > 0 || parts.length === 0) parts.push(await upload.uploadPart(parts.length + 1, buffer.subarray(0, filled)));
    await upload.complete(parts);
  } catch (error) {
    await upload.abort().catch(() => {});
    await reader.cancel(error).catch(() => {});
    throw error;
  }
}
