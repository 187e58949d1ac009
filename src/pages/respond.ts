import { acceptsGzip, COMPRESS_FROM_BYTES } from '../http/responses';
import { StoredDocument } from '../store/stored-body';
import { layout } from './layout';
import { html } from './html';

/**
 * Responses for pages: security headers on every one (a CSP without inline
 * script or style, nosniff, a strict referrer policy, no framing), gzip for
 * clients that accept it like stored documents, HTML 404s for browsers.
 */

export const PAGE_SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

/**
 * An HTML response. `page` may be a StoredDocument (a page kept in the
 * isolate) so its gzip is computed once per cached page, whatever its size; a
 * string is a page made for this request, compressed only from
 * COMPRESS_FROM_BYTES. Compressed only with `compress` (GZIP_DOCUMENTS, as
 * stored documents) and when the client accepts gzip.
 */
export async function htmlResponse(
  request: Request,
  page: string | StoredDocument,
  options: { status?: number; cacheControl: string; headers?: Record<string, string>; compress?: boolean },
): Promise<Response> {
  const document = typeof page === 'string' ? new StoredDocument(page) : page;
  const headers: Record<string, string> = {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': options.cacheControl,
    vary: 'Accept-Encoding, Cookie',
    ...PAGE_SECURITY_HEADERS,
    ...options.headers,
  };
  const status = options.status ?? 200;
  const small = typeof page === 'string' && page.length < COMPRESS_FROM_BYTES;
  if (!options.compress || small || !acceptsGzip(request.headers.get('accept-encoding'))) {
    return new Response(document.text, { status, headers });
  }
  return new Response(await document.gzip(), { status, headers: { ...headers, 'content-encoding': 'gzip' }, encodeBody: 'manual' });
}

/** True when the client prefers HTML (a browser navigation): Accept lists text/html. */
export function wantsHtml(request: Request): boolean {
  return (request.headers.get('accept') ?? '').toLowerCase().includes('text/html');
}

/** A see-other redirect (after a form post, or the no-JS version switcher). */
export function redirect(location: string, headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: { location, 'cache-control': 'no-store', ...PAGE_SECURITY_HEADERS, ...headers } });
}

/** An HTML error page (404 unless `status` says otherwise) with a way back. */
export function errorPage(request: Request, hostname: string, message: string, status = 404): Promise<Response> {
  const title = status === 404 ? 'Not found' : status === 400 ? 'Bad request' : 'Error';
  const body = html`<h1>${title}</h1><p class="lead">${message}</p><p><a href="/">Browse all providers</a></p>`;
  return htmlResponse(request, layout({ title, hostname, body }), { status, cacheControl: 'no-store' });
}
