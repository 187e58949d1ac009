import { InputError } from '../../protocol/errors';
import { uploadFileKey, uploadMultipartKey, uploadPartKey, uploadPartsPrefix } from '../layout';
import { listAllObjectKeys } from '../list';
import type { DeclaredFile, UploadSession } from './session';

/**
 * Staged files of an upload session in R2: written by the PUT route (whole,
 * SHA-256 checked by R2 itself, or in parts through an R2 multipart upload)
 * and found complete and intact by the commit. Never served.
 */

/** The number of parts `file` is sent in (1: one PUT of the whole file). */
export function partCount(session: UploadSession, file: DeclaredFile): number {
  return file.size > session.partSize ? Math.ceil(file.size / session.partSize) : 1;
}

/** The byte length of part `n` (1-based) of `file`. */
export function partLength(session: UploadSession, file: DeclaredFile, n: number): number {
  const parts = partCount(session, file);
  return n < parts ? session.partSize : file.size - (parts - 1) * session.partSize;
}

/**
 * Stores the whole body of `file` (exactly file.size bytes), R2 checking
 * its SHA-256 against the declared one as it is written. Throws InputError
 * (400) when the bytes do not have that SHA-256 (nothing stored).
 */
export async function stageWholeFile(bucket: R2Bucket, session: UploadSession, file: DeclaredFile, body: ReadableStream): Promise<void> {
  try {
    await bucket.put(uploadFileKey(session.id, file.filename), body, {
      sha256: file.sha256,
      httpMetadata: { contentType: file.contentType },
      customMetadata: { sha256: file.sha256 },
    });
  } catch (error) {
    if (/checksum|digest|sha-?256|hash/i.test(String((error as Error)?.message))) {
      throw new InputError(
        `${file.filename}: the uploaded bytes do not have the SHA-256 declared for it (${file.sha256}); nothing was stored — upload the file the manifest describes`,
      );
    }
    throw error;
  }
}

/** Stores part `n` of `file` in the session's R2 multipart upload (started by the first part to arrive). */
export async function stagePart(bucket: R2Bucket, session: UploadSession, file: DeclaredFile, n: number, body: ReadableStream): Promise<void> {
  const key = uploadFileKey(session.id, file.filename);
  const uploadId = await multipartUploadId(bucket, session, file);
  const part = await bucket.resumeMultipartUpload(key, uploadId).uploadPart(n, body);
  await bucket.put(uploadPartKey(session.id, file.filename, n), JSON.stringify({ partNumber: part.partNumber, etag: part.etag }));
}

async function multipartUploadId(bucket: R2Bucket, session: UploadSession, file: DeclaredFile): Promise<string> {
  const pointer = uploadMultipartKey(session.id, file.filename);
  const existing = await bucket.get(pointer);
  if (existing) return existing.text();
  const upload = await bucket.createMultipartUpload(uploadFileKey(session.id, file.filename), {
    httpMetadata: { contentType: file.contentType },
    customMetadata: { sha256: file.sha256 },
  });
  // Two first parts racing: one pointer wins, the other upload is aborted.
  if (await bucket.put(pointer, upload.uploadId, { onlyIf: { etagDoesNotMatch: '*' } })) return upload.uploadId;
  await upload.abort();
  return await (await bucket.get(pointer))!.text();
}

/**
 * The staged object of `file`, complete: a file sent in parts is assembled
 * (every part must have arrived) and its SHA-256 computed by streaming it
 * through crypto.DigestStream (R2 checks no whole-object checksum for
 * multipart uploads). Returns its key. Throws InputError (400) when it was
 * not (completely) uploaded or its size or SHA-256 is not the declared one.
 */
export async function completeStagedFile(bucket: R2Bucket, session: UploadSession, file: DeclaredFile): Promise<string> {
  const key = uploadFileKey(session.id, file.filename);
  let head = await bucket.head(key);
  const parts = partCount(session, file);
  if (head === null && parts > 1) {
    const pointer = await bucket.get(uploadMultipartKey(session.id, file.filename));
    if (pointer === null) throw new InputError(`${file.filename} was not uploaded: PUT its ${parts} parts first`);
    const partKeys = await listAllObjectKeys(bucket as never, uploadPartsPrefix(session.id, file.filename));
    const uploaded = await Promise.all(partKeys.map(async (k) => JSON.parse(await (await bucket.get(k))!.text()) as R2UploadedPart));
    const missing = Array.from({ length: parts }, (_, i) => i + 1).filter((n) => !uploaded.some((p) => p.partNumber === n));
    if (missing.length) throw new InputError(`${file.filename}: part${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of ${parts} not uploaded yet`);
    await bucket.resumeMultipartUpload(key, await pointer.text()).complete(uploaded.sort((a, b) => a.partNumber - b.partNumber));
    head = await bucket.head(key);
    if (head && head.size === file.size && (await storedSha256(bucket, key)) !== file.sha256) {
      await bucket.delete(key);
      throw new InputError(`${file.filename}: the uploaded parts do not have the SHA-256 declared for the file (${file.sha256}); upload it again`);
    }
  }
  if (head === null) throw new InputError(`${file.filename} was not uploaded: PUT it to its url first`);
  if (head.size !== file.size) throw new InputError(`${file.filename}: ${head.size} bytes were uploaded, the manifest declares ${file.size}`);
  if (head.customMetadata?.sha256 !== file.sha256) throw new InputError(`${file.filename}: the staged file is not the one declared; upload it again`);
  return key;
}

/**
 * Reads a staged file sent in one PUT whole (for small files: one R2 read
 * instead of a head, then reads by range and a copy), with the checks of
 * completeStagedFile: uploaded, of the declared size, the declared SHA-256
 * (R2 checked it against the bytes as they were written). Returns its key
 * and bytes. Throws InputError (400) as completeStagedFile does.
 */
export async function readStagedFile(bucket: R2Bucket, session: UploadSession, file: DeclaredFile): Promise<{ key: string; bytes: Uint8Array }> {
  const key = uploadFileKey(session.id, file.filename);
  if (partCount(session, file) > 1) throw new Error(`${file.filename} is sent in parts: complete it with completeStagedFile`);
  const object = await bucket.get(key);
  if (object === null) throw new InputError(`${file.filename} was not uploaded: PUT it to its url first`);
  if (object.size !== file.size) {
    await object.body.cancel();
    throw new InputError(`${file.filename}: ${object.size} bytes were uploaded, the manifest declares ${file.size}`);
  }
  if (object.customMetadata?.sha256 !== file.sha256) {
    await object.body.cancel();
    throw new InputError(`${file.filename}: the staged file is not the one declared; upload it again`);
  }
  const bytes = new Uint8Array(await object.arrayBuffer());
  if (bytes.byteLength !== file.size) throw new Error(`${key} changed while being read`);
  return { key, bytes };
}

async function storedSha256(bucket: R2Bucket, key: string): Promise<string> {
  const object = await bucket.get(key);
  if (object === null) throw new Error(`${key} disappeared while being hashed`);
  const digest = new crypto.DigestStream('SHA-256');
  await object.body.pipeTo(digest);
  return [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** A stream of the staged object's bytes with its length known (R2 puts need one), for copying it to its own name. */
export function stagedStream(bucket: R2Bucket, key: string, size: number): ReadableStream {
  const { readable, writable } = new FixedLengthStream(size);
  bucket
    .get(key)
    .then(
      (object) => (object ? object.body.pipeTo(writable) : writable.abort(new Error(`${key} disappeared`))),
      (error) => writable.abort(error),
    )
    .catch(() => {});
  return readable;
}
