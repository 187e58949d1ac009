import type { IRequest, RouteEntry } from 'itty-router';
import { errorResponse } from '../http/responses';

/** The order methods are listed in an Allow header. */
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Makes every GET route of the table answer HEAD too (RFC 9110 §9.3.2):
 * itty-router matches a route's method exactly, so a HEAD entry is added
 * right after each GET one, with the same pattern and handlers. Call once,
 * after the table is complete; withoutBodyForHead then drops the body.
 */
export function answerHeadLikeGet<R, A extends unknown[]>(routes: RouteEntry<R, A>[]): void {
  const withHead = routes.flatMap((route) => (route[0] === 'GET' ? [route, ['HEAD', ...route.slice(1)] as RouteEntry<R, A>] : [route]));
  routes.splice(0, routes.length, ...withHead);
}

/**
 * The methods the table has for `path` (routes registered for every method,
 * like the catch-all, are not counted), in Allow-header order.
 */
export function allowedMethods<R, A extends unknown[]>(routes: RouteEntry<R, A>[], path: string): string[] {
  const methods = new Set<string>();
  for (const [method, pattern] of routes) if (method !== 'ALL' && pattern.test(path)) methods.add(method);
  return [...methods].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
}

/**
 * 405 with Allow when the path exists in the table with other methods only;
 * undefined otherwise (no such path, or the route let the request fall through).
 */
export function wrongMethod<R, A extends unknown[]>(routes: RouteEntry<R, A>[], request: IRequest): Response | undefined {
  const allow = allowedMethods(routes, new URL(request.url).pathname);
  if (allow.length === 0 || allow.includes(request.method)) return undefined;
  return errorResponse(405, `method ${request.method} is not allowed here; use ${allow.join(', ')}`, { allow: allow.join(', ') });
}

/**
 * HEAD answers like GET without a body, with the Content-Length GET would
 * send (release files answer HEAD from R2 metadata alone and have no body here).
 */
export async function withoutBodyForHead(response: Response, request: IRequest): Promise<Response> {
  if (request.method !== 'HEAD' || response.body === null) return response;
  const headers = new Headers(response.headers);
  if (!headers.has('content-length')) headers.set('content-length', String((await response.arrayBuffer()).byteLength));
  else await response.body.cancel();
  return new Response(null, { status: response.status, headers });
}
