import { InputError } from './protocol/errors';

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

/** The error shape Terraform's registry client reads: {"errors": ["…"]}. */
export function errorResponse(status: number, message: string, headers: Record<string, string> = {}): Response {
  const body = JSON.stringify({ errors: [message] });
  return new Response(body, {
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

/** Maps an error thrown by a handler to a response: InputError → its 4xx, anything else → 500 without internals. */
export function errorToResponse(error: unknown): Response {
  if (error instanceof InputError) return errorResponse(error.status, error.message);
  console.error('internal error', error);
  return errorResponse(500, 'internal error');
}
