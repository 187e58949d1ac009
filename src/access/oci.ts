import type { IRequest } from 'itty-router';
import { isPrivate, settings } from '../config';
import type { Env } from '../env';
import { ociErrorBody, parseRepositoryName, pullScope, pulledRepositories, type OciErrorCode } from '../protocol/oci';
import { parseHostname, parseProviderName } from '../protocol/address';
import { parseModuleName } from '../protocol/modules-v1';
import { InputError } from '../protocol/errors';
import { base64url, constantTimeEqual, fromBase64url } from './crypto/bytes';
import { hmacSha256 } from './crypto/hmac';
import { scopeGrants } from './scope';
import { authenticate, type Authentication } from './tokens';

/**
 * Access to the OCI view (/v2/, docs/oci.md) with the registry's own rules:
 * public mode lets everyone read (no KV read, no crypto); private mode
 * answers 401 with OCI's Bearer challenge — realm this host's /v2/token,
 * service the host, scope `repository:NAME:pull` — and accepts
 *  - a short-lived OCI token the token endpoint issued (HMAC under
 *    URL_SIGNING_SECRET, listing the repositories it may pull; no storage read),
 *  - the registry's read token itself, as `Authorization: Bearer` (what an
 *    `oci_credentials` block's access_token sends) or as the password of Basic.
 * A read token is checked by the one check of every registry route
 * (authenticate: its KV record, expiry, purpose) and its scopes by the one
 * scope rule (scope.ts scopeGrants), so `/v2/` grants exactly what `/v1/` grants.
 */

/** Seconds an issued OCI token is valid: the registry's revocation bound (a revoked read token is refused everywhere within 60 s). */
export const OCI_TOKEN_SECONDS = 60;
const OCI_TOKEN_PREFIX = 'eoci_';

/** An OCI error response ({"errors":[{code,message}]}), never cached. */
export function ociError(status: number, code: OciErrorCode, message: string, headers: Record<string, string> = {}): Response {
  return new Response(ociErrorBody(code, message), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers } });
}

/** The host and namespace whose scope rule governs repository `name`; InputError (400) for a name of neither kind or with a malformed part. */
export function repositoryNamespace(name: string, ownHostname: string): { hostname: string; namespace: string } {
  const repository = parseRepositoryName(name);
  if (!repository)
    throw new InputError(`"${name.slice(0, 200)}" is not a repository of this registry: providers/HOST/NAMESPACE/TYPE or modules/NAMESPACE/NAME/SYSTEM`);
  if (repository.kind === 'provider') return { hostname: parseHostname(repository.hostname), namespace: parseProviderName(repository.namespace, 'namespace') };
  return { hostname: ownHostname, namespace: parseModuleName(repository.namespace, 'namespace') };
}

/** The repository name of a /v2/NAME/(manifests|blobs|tags|referrers)/… path, or '' for /v2/ itself. */
export function requestRepository(request: Request): string {
  const path = new URL(request.url).pathname;
  const match = /^\/v2\/(.+)\/(manifests|blobs|tags|referrers)\/[^/]+$/.exec(path);
  if (!match) return '';
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return match[1]!; // a malformed percent-encoding: the route answers 400 once a credential is accepted
  }
}

/** The Bearer challenge for `repository` ('' for the base route: no scope). */
function challenge(request: Request, repository: string, error?: 'invalid_token' | 'insufficient_scope'): string {
  const url = new URL(request.url);
  const parts = [`realm="${url.origin}/v2/token"`, `service="${url.host}"`];
  if (repository) parts.push(`scope="${pullScope(repository)}"`);
  if (error) parts.push(`error="${error}"`);
  return `Bearer ${parts.join(',')}`;
}

/**
 * Guard of every /v2/ route (src/index.ts). Public mode: undefined at once.
 * Private mode: undefined when the request carries an OCI token listing this
 * repository (any valid one for /v2/ itself) or a read token whose scopes
 * cover it; else 401 UNAUTHORIZED with the challenge (no credentials, an
 * unknown, revoked, expired or altered token, an OCI token for other
 * repositories) or 403 DENIED (a valid read token without the namespace in
 * its scopes, saying which scopes it has); 400 NAME_INVALID for a
 * repository name of neither kind, once a credential was presented.
 */
export function requireOciPull(request: IRequest, env: Env): Promise<Response | undefined> | undefined {
  return isPrivate(env) ? checkOciPull(request, env) : undefined;
}

async function checkOciPull(request: Request, env: Env): Promise<Response | undefined> {
  const repository = requestRepository(request);
  const header = request.headers.get('authorization') ?? '';
  const bearer = /^\s*bearer +(\S+)\s*$/i.exec(header)?.[1];
  if (bearer?.startsWith(OCI_TOKEN_PREFIX)) {
    const repositories = await verifyOciToken(bearer, settings(env).signingSecret);
    if (repositories && (repository === '' || repositories.includes(repository))) return undefined;
    const why = repositories ? `this token does not grant pulling ${repository}` : 'the token is not valid: altered, or older than 60 seconds';
    return ociError(401, 'UNAUTHORIZED', why, { 'www-authenticate': challenge(request, repository, repositories ? 'insufficient_scope' : 'invalid_token') });
  }
  const readToken = bearer ?? basicPassword(header);
  if (readToken === undefined) {
    return ociError(401, 'UNAUTHORIZED', 'this registry is private: sign in with a read token (oci_credentials, skopeo --creds, docker login)', {
      'www-authenticate': challenge(request, repository),
    });
  }
  const auth = await readTokenAuthentication(readToken, env);
  if (!auth.ok) return ociError(401, 'UNAUTHORIZED', auth.message, { 'www-authenticate': challenge(request, repository, 'invalid_token') });
  if (repository === '') return undefined;
  const place = placeOf(repository, env);
  if (place instanceof Response) return place;
  return grants(auth, place, env) ? undefined : denied(auth, place);
}

/** The hostname and namespace a repository name is in, or the OCI error (400 NAME_INVALID) naming what is wrong. */
function placeOf(repository: string, env: Env): { hostname: string; namespace: string } | Response {
  try {
    return repositoryNamespace(repository, settings(env).hostname);
  } catch (error) {
    if (error instanceof InputError) return ociError(400, 'NAME_INVALID', error.message);
    throw error;
  }
}

function grants(auth: Authentication & { ok: true }, place: { hostname: string; namespace: string }, env: Env): boolean {
  return scopeGrants(auth.record.scopes, 'read', place, settings(env).hostname);
}

function denied(auth: Authentication & { ok: true }, place: { hostname: string; namespace: string }): Response {
  return ociError(
    403,
    'DENIED',
    `this token has no access to namespace "${place.namespace}" at ${place.hostname}; its scopes: ${auth.record.scopes.join(', ')}`,
  );
}

/** The password of a Basic Authorization header, undefined when there is none or it is malformed. */
function basicPassword(header: string): string | undefined {
  const match = /^\s*basic +([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) return undefined;
  let decoded: string;
  try {
    decoded = atob(match[1]!);
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : decoded.slice(colon + 1);
}

/** The one read-token check (authenticate), for a token that came as a password or form field rather than a Bearer header. */
function readTokenAuthentication(token: string, env: Env): Promise<Authentication> {
  return authenticate(new Request('https://oci.invalid/', { headers: { authorization: `Bearer ${token}` } }), env.REGISTRY_KV);
}

/**
 * GET|POST /v2/token — the token endpoint of the challenge (Docker's token
 * protocol as oras-go and containers/image speak it). The read token comes as
 * Basic auth's password (any user name), as a Bearer header, or in a POST
 * form as `password` or `refresh_token`. Each `scope=repository:NAME:pull`
 * is granted when the token's scopes cover NAME's namespace (the /v1/ rule).
 * 200 {"token","access_token","expires_in":60,"issued_at"} listing the
 * granted repositories; 401 UNAUTHORIZED without a valid read token;
 * 403 DENIED when it covers none of the asked repositories; 400 NAME_INVALID
 * for a repository of neither kind or with a malformed hostname or namespace
 * (a scope that is not `repository:NAME:ACTIONS` with pull is ignored, as
 * Docker's token protocol does). Public mode: 200 with an anonymous token
 * (every route is open anyway). Cost: one KV read (the token record).
 */
export async function ociTokenEndpoint(request: IRequest, env: Env): Promise<Response> {
  const url = new URL(request.url);
  let scopes = url.searchParams.getAll('scope');
  let token: string | undefined;
  const header = request.headers.get('authorization') ?? '';
  token = /^\s*bearer +(\S+)\s*$/i.exec(header)?.[1] ?? basicPassword(header);
  if (request.method === 'POST') {
    const type = request.headers.get('content-type') ?? '';
    if (!type.toLowerCase().startsWith('application/x-www-form-urlencoded'))
      return ociError(400, 'UNSUPPORTED', 'the body must be application/x-www-form-urlencoded');
    const text = await boundedText(request, MAX_FORM_BYTES);
    if (text === null) return ociError(413, 'UNSUPPORTED', `the form is larger than ${MAX_FORM_BYTES} bytes`);
    const form = new URLSearchParams(text);
    token ??= form.get('refresh_token') ?? form.get('password') ?? undefined;
    scopes = [...scopes, ...form.getAll('scope')];
  }
  const repositories = pulledRepositories(scopes);
  if (!isPrivate(env)) return tokenAnswer('anonymous');
  if (token === undefined)
    return ociError(401, 'UNAUTHORIZED', 'this registry is private: send a read token as the password', { 'www-authenticate': 'Basic realm="edge-registry"' });
  const auth = await readTokenAuthentication(token, env);
  if (!auth.ok) return ociError(401, 'UNAUTHORIZED', auth.message, { 'www-authenticate': 'Basic realm="edge-registry"' });
  const granted: string[] = [];
  let refused: Response | undefined;
  for (const repository of repositories) {
    const place = placeOf(repository, env);
    if (place instanceof Response) return place;
    if (grants(auth, place, env)) granted.push(repository);
    else refused ??= denied(auth, place);
  }
  if (refused && granted.length === 0) return refused;
  return tokenAnswer(await issueOciToken(granted, settings(env).signingSecret));
}

/** The largest token request form read (a read token and a few scopes need far less). */
const MAX_FORM_BYTES = 8192;

/** The body as text, read at most `limit` bytes while it streams; null (nothing more read) when it is longer. */
async function boundedText(request: Request, limit: number): Promise<string | null> {
  if (Number(request.headers.get('content-length') ?? 0) > limit) return null;
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

function tokenAnswer(token: string): Response {
  const body = JSON.stringify({ token, access_token: token, expires_in: OCI_TOKEN_SECONDS, issued_at: new Date().toISOString() });
  return new Response(body, { headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });
}

const MAC_PURPOSE = 'oci-token\n';

/** An OCI token for `repositories`, valid OCI_TOKEN_SECONDS: eoci_PAYLOAD.MAC (base64url JSON, HMAC-SHA256 under `secret`). */
export async function issueOciToken(repositories: readonly string[], secret: string, now = Date.now()): Promise<string> {
  const payload = base64url(new TextEncoder().encode(JSON.stringify({ r: repositories, e: Math.floor(now / 1000) + OCI_TOKEN_SECONDS })));
  return `${OCI_TOKEN_PREFIX}${payload}.${base64url(await hmacSha256(secret, MAC_PURPOSE + payload))}`;
}

/** The repositories an OCI token grants, or null when it is malformed, altered (MAC compared in constant time) or expired. */
export async function verifyOciToken(token: string, secret: string, now = Date.now()): Promise<string[] | null> {
  const match = /^eoci_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return null;
  const mac = fromBase64url(match[2]!);
  if (!mac || !constantTimeEqual(mac, await hmacSha256(secret, MAC_PURPOSE + match[1]!))) return null;
  const bytes = fromBase64url(match[1]!);
  if (!bytes) return null;
  const claims = JSON.parse(new TextDecoder().decode(bytes)) as { r?: unknown; e?: unknown };
  if (typeof claims.e !== 'number' || claims.e <= now / 1000 || !Array.isArray(claims.r) || !claims.r.every((r) => typeof r === 'string')) return null;
  return claims.r as string[];
}
