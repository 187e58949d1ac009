import type { IRequest } from 'itty-router';
import { errorResponse } from '../http/responses';

/**
/**
 * The read routes answer GET and HEAD only: any other method gets 405 with Allow.
 * The exceptions: POST to the pages' /login and /logout forms, login.v1's
 * token endpoint and the Tokens page's forms, and the publish API
 * (/v1/publish/…), whose routes check their own methods.
 */
export function onlyGetAndHead(request: IRequest): Response | undefined {
  if (request.method === 'GET' || request.method === 'HEAD') return undefined;
  const path = new URL(request.url).pathname;
  if (request.method === 'POST' && /^\/log(in|out)$/.test(path)) return undefined;
  // Sign-in (src/identity/): login.v1's token endpoint and the Tokens page's forms.
  if (request.method === 'POST' && /^\/(oauth\/token|tokens(\/[a-z-]+)?)$/.test(path)) return undefined;
  if (path.startsWith('/v1/publish/')) return undefined;
  return errorResponse(405, `method ${request.method} is not allowed; this registry is read-only`, { allow: 'GET, HEAD' });
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
