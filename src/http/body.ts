import { concatBytes } from '../bytes';
import { InputError } from '../protocol/errors';

/**
 * Reading a request body with a size limit that holds while the body
 * streams: every small body the Worker reads (publish manifests, lifecycle
 * changes, the login.v1 token request, the pages' forms) goes through
 * readBodyAtMost, so a client that sends more — a declared Content-Length
 * over the limit, or a chunked body with no declared length — is refused
 * with 413 after at most `limit` bytes (plus the chunk that crossed it)
 * were held, never after the whole body was buffered. Large files (the
 * publish API's uploads) stream to R2 instead (src/routes/publish/uploads.ts).
 */

/**
 * The body of `request`, at most `limit` bytes. Throws InputError 413 when
 * Content-Length declares more (nothing is read) or when the body streams
 * past `limit` (reading stops and the rest is cancelled), and InputError 400
 * when the body cannot be read. An absent body is zero bytes.
 */
export async function readBodyAtMost(request: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) {
    await request.body?.cancel().catch(() => undefined);
    throw new InputError(`the request body is ${declared} bytes; at most ${limit} are accepted here`, 413);
  }
  if (request.body === null) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch {
      throw new InputError('the request body could not be read');
    }
    if (chunk.done) break;
    total += chunk.value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw new InputError(`the request body is over ${limit} bytes; at most ${limit} are accepted here`, 413);
    }
    chunks.push(chunk.value);
  }
  return concatBytes(chunks, total);
}

/** The body as UTF-8 text, at most `limit` bytes: readBodyAtMost's refusals. */
export async function readTextAtMost(request: Request, limit: number): Promise<string> {
  return new TextDecoder().decode(await readBodyAtMost(request, limit));
}

/** A JSON body of at most `limit` bytes: readBodyAtMost's refusals, and InputError 400 when it is not JSON. */
export async function readJsonAtMost(request: Request, limit: number): Promise<unknown> {
  const text = await readTextAtMost(request, limit);
  try {
    return JSON.parse(text);
  } catch {
    throw new InputError('the request body is not JSON');
  }
}

/**
 * A form body (urlencoded or multipart, as the request's Content-Type says)
 * of at most `limit` bytes: readBodyAtMost's refusals, and InputError 400
 * when it is not a form.
 */
export async function readFormAtMost(request: Request, limit: number): Promise<FormData> {
  const bytes = await readBodyAtMost(request, limit);
  try {
    return await new Response(bytes, { headers: { 'content-type': request.headers.get('content-type') ?? '' } }).formData();
  } catch {
    throw new InputError('the form could not be read');
  }
}
