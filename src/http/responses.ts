import { errorBody, InputError } from '../protocol/errors';
import type { StoredDocument } from '../store/stored-body';

/** Cache-Control for things that never change once published (release files, a version's documents). */
export const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * A JSON response from a body that is already serialised (stored bodies are
 * served byte for byte). The runtime sets Content-Length from the string, so
 * a large list is not encoded twice per request.
 */
export function jsonBody(body: string, cacheControl: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': cacheControl },
  });
}

/** Below this many characters a page rendered for one request is sent as is: compressing it would cost more than it saves. */
export const COMPRESS_FROM_BYTES = 1024;

/**
 * A stored JSON document as a response: its text — with `compress`,
 * gzip-compressed once per cached document when the request accepts gzip
 * (Terraform's and OpenTofu's HTTP client always do), whatever its size, so
 * no request compresses anything (a small document's compressed copy costs a
 * few bytes of memory; compressing it on every request, as Cloudflare's edge
 * and Miniflare's entry Worker otherwise do for a gzip client, costs CPU
 * each time), with `Vary: Accept-Encoding` either way. A route that rewrites
 * a document's URLs passes the rewritten StoredDocument
 * (src/access/release-urls.ts servedDocument), which keeps its own
 * compressed copy; `document` must be such a kept one, never one made for a
 * single request.
 */
export async function documentResponse(request: Request, document: StoredDocument, cacheControl: string, options: { compress: boolean }): Promise<Response> {
  if (!options.compress) return jsonBody(document.text, cacheControl);
  const headers = { 'content-type': 'application/json', 'cache-control': cacheControl, vary: 'Accept-Encoding' };
  if (!acceptsGzip(request.headers.get('accept-encoding'))) return new Response(document.text, { headers });
  return new Response(await document.gzip(), {
    headers: { ...headers, 'content-encoding': 'gzip' },
    encodeBody: 'manual',
  });
}

/** True when an Accept-Encoding header lists gzip (or *) without q=0. */
export function acceptsGzip(header: string | null): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') return false;
    return !params.some((param) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(param));
  });
}

/** The error shape Terraform's registry client reads: {"errors": ["…"]}. */
export function errorResponse(status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(errorBody(message), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });
}

export function notFound(message = 'not found'): Response {
  return errorResponse(404, message);
}

/**
 * Decodes one raw path segment. Throws InputError (400) for a malformed
 * percent-encoding, a NUL or control character, or a segment over 256 bytes,
 * so such requests never reach the store.
 */
export function pathSegment(raw: string | undefined, what: string): string {
  if (raw === undefined) throw new InputError(`${what} is missing`);
  if (raw.length > 256) throw new InputError(`${what} is longer than 256 characters`);
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new InputError(`${what} has a malformed percent-encoding`);
  }
  if (/[\u0000-\u001f\u007f/\\]/.test(decoded)) throw new InputError(`${what} contains a control character or slash`);
  return decoded;
}
