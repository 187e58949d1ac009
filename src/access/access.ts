import type { IRequest } from 'itty-router';
import { isPrivate, settings } from '../config';
import type { Env } from '../env';
import { errorResponse, pathSegment } from '../http/responses';
import { parseHostname, parseProviderName } from '../protocol/address';
import { parseModuleName } from '../protocol/modules-v1';
import { verifySignedUrl } from './signed-urls';
import { scopeGrants } from './scope';
import { authenticate } from './tokens';

/**
 * The route guards of private mode (see src/index.ts). In public mode both
 * return undefined at once — no KV read, no crypto — and the route's handler
 * answers as before. Discovery asks for no credential: it stays public (publicRoute).
 */

/**
 * The guard of a route open to anyone, in either mode (discovery, the token endpoints, sign-in, static
 * assets): asks for no credential and lets the handler run. It names, in the route table, that the route
 * is public on purpose; what the handler is given (a token to sign in with, a login code) it checks itself.
 */
export function publicRoute(_request: IRequest, _env: Env): undefined {
  return undefined;
}

/**
 * Guard of the registry and mirror metadata routes. In private mode:
 * - 401 {"errors":[…]} with `WWW-Authenticate: Bearer realm="edge-registry"`
 *   (plus error="invalid_token" when a token was sent) for a missing,
 *   malformed, unknown, revoked or expired token;
 * - 400 for a malformed hostname or namespace in the path (after the token
 *   is accepted, so unauthenticated callers learn nothing about names);
 * - 403 when the token is valid but none of its scopes covers the
 *   requested namespace (see src/access/tokens.ts for how scopes name
 *   hostnames). 403 rather than 404: the scope is checked before the store
 *   is read, so the answer is the same whether the provider exists or not —
 *   it reveals nothing — and it tells the user their token, not the
 *   provider address, is what to fix.
 * Otherwise undefined, and the route's handler runs.
 */
export function requireReadToken(request: IRequest, env: Env): Promise<Response | undefined> | undefined {
  return isPrivate(env) ? checkReadToken(request, env, (raw) => parseProviderName(raw, 'namespace')) : undefined;
}

/**
 * Guard of the modules.v1 routes: requireReadToken with module naming rules
 * for the namespace (underscores allowed). Tokens scope modules by namespace
 * exactly as providers: a scope "acme" grants acme's providers and modules.
 */
export function requireModuleReadToken(request: IRequest, env: Env): Promise<Response | undefined> | undefined {
  return isPrivate(env) ? checkReadToken(request, env, (raw) => parseModuleName(raw, 'namespace')) : undefined;
}

export async function checkReadToken(request: IRequest, env: Env, parseNamespace: (raw: string) => string): Promise<Response | undefined> {
  const auth = await authenticate(request, env.REGISTRY_KV);
  if (!auth.ok) {
    const challenge = auth.error ? `Bearer realm="edge-registry", error="${auth.error}"` : 'Bearer realm="edge-registry"';
    return errorResponse(401, auth.message, { 'www-authenticate': challenge });
  }
  const ownHostname = settings(env).hostname;
  const hostname = request.params.hostname === undefined ? ownHostname : parseHostname(pathSegment(request.params.hostname, 'hostname'));
  const namespace = parseNamespace(pathSegment(request.params.namespace, 'namespace'));
  if (!scopeGrants(auth.record.scopes, 'read', { hostname, namespace }, ownHostname)) {
    return errorResponse(403, `this token has no access to namespace "${namespace}" at ${hostname}; its scopes: ${auth.record.scopes.join(', ')}`);
  }
  return undefined;
}

/**
 * Guard of the release-file route (module packages: module-archive-access.ts,
 * which also takes a read token). In private mode a request without a
 * valid signature (missing, malformed, tampered, re-targeted to another
 * file, or expired) gets 403 {"errors":[…]}; a bearer token is neither
 * needed nor accepted instead, since Terraform never sends one to these
 * URLs. Otherwise undefined.
 */
export function requireSignedUrl(request: IRequest, env: Env): Promise<Response | undefined> | undefined {
  return isPrivate(env) ? checkSignedUrl(request, env) : undefined;
}

async function checkSignedUrl(request: IRequest, env: Env): Promise<Response | undefined> {
  const verification = await verifySignedUrl(request, settings(env));
  return verification.ok ? undefined : errorResponse(403, verification.message);
}
