import type { IRequest } from 'itty-router';
import type { Env } from '../../env';
import { isPrivate, settings } from '../../config';
import { ociError } from '../../access/oci';
import { IMMUTABLE, pathSegment } from '../../http/responses';
import { refusalStatus } from '../../http/errors';
import { serveR2Object } from '../../http/r2-object';
import { edgeCacheFor } from '../../store/edge-cache';
import { EMPTY_CONFIG_BYTES, EMPTY_CONFIG_DIGEST, EMPTY_REFERRERS, OCI_EMPTY, OCI_INDEX, pageOfTags, parseDigest, versionTag } from '../../protocol/oci';
import { readLayerKey, readManifestByDigest, type StoredManifest } from '../../store/oci';

/**
 * What every route of the OCI view shares (src/routes/oci/, docs/oci.md):
 * the OCI error body for every refusal, stored manifests as responses, the
 * tag list's paging, blobs served by the one release-file server, the
 * referrers answer and the base route.
 */

type Handler = (request: IRequest, env: Env, ctx?: ExecutionContext) => Promise<Response>;

/**
 * `handler` with its refusals as OCI error JSON: a 404 becomes `notFound`'s
 * code (NAME_UNKNOWN, MANIFEST_UNKNOWN or BLOB_UNKNOWN), a 400 NAME_INVALID
 * (DIGEST_INVALID when the message names a digest), 429 TOOMANYREQUESTS,
 * another 4xx or an upstream's 5xx UNSUPPORTED/… with its status; other
 * errors are thrown on to the router (a 500 without internals).
 */
export function ociRoute(notFound: 'NAME_UNKNOWN' | 'MANIFEST_UNKNOWN' | 'BLOB_UNKNOWN', handler: Handler): Handler {
  return async (request, env, ctx) => {
    try {
      return await handler(request, env, ctx);
    } catch (error) {
      const status = refusalStatus(error);
      if (status === null) throw error;
      const message = (error as Error).message;
      if (status === 404) return ociError(404, notFound, message);
      if (status === 400) return ociError(400, /digest/.test(message) ? 'DIGEST_INVALID' : /tag/.test(message) ? 'TAG_INVALID' : 'NAME_INVALID', message);
      if (status === 429) return ociError(429, 'TOOMANYREQUESTS', message);
      return ociError(status, status === 403 ? 'DENIED' : 'UNSUPPORTED', message);
    }
  };
}

/** Cache-Control of what never changes (a manifest by digest, a blob): immutable in public mode, private in private mode. */
function immutable(env: Env): string {
  return isPrivate(env) ? 'private, max-age=3600' : IMMUTABLE;
}

/**
 * A stored manifest or index as sent: its bytes, its own Content-Type,
 * Content-Length, Docker-Content-Digest and ETag. By tag it may be cached
 * for the list TTL (a withdrawal untags it); by digest for good.
 */
export function manifestResponse(stored: StoredManifest, env: Env, byDigest: boolean): Response {
  return new Response(stored.bytes, {
    headers: {
      'content-type': stored.mediaType,
      'content-length': String(stored.bytes.byteLength),
      'docker-content-digest': stored.digest,
      etag: `"${stored.digest}"`,
      'cache-control': byDigest ? immutable(env) : settings(env).listCacheControl,
    },
  });
}

/** GET|HEAD /v2/REPO/manifests/sha256:… — one R2 get; MANIFEST_UNKNOWN when this repository has no such manifest. */
export async function manifestByDigest(env: Env, repo: string, reference: string): Promise<Response> {
  const stored = await readManifestByDigest(env.REGISTRY_R2, repo, parseDigest(reference));
  if (!stored) return ociError(404, 'MANIFEST_UNKNOWN', `${reference} is not a manifest of this repository`);
  return manifestResponse(stored, env, true);
}

/**
 * GET|HEAD /v2/REPO/blobs/sha256:… — the empty config `{}` from memory; a
 * layer through its pointer (one R2 head) and then the one release-file
 * server (serveR2Object: ranges, conditions, the edge cache) on the stored
 * zip itself. Docker-Content-Digest on every answer; BLOB_UNKNOWN otherwise.
 */
export async function blob(request: IRequest, env: Env, ctx: ExecutionContext | undefined, repo: string): Promise<Response> {
  const hex = parseDigest(pathSegment(request.params.digest, 'digest'));
  const digest = `sha256:${hex}`;
  if (digest === EMPTY_CONFIG_DIGEST) {
    return new Response(EMPTY_CONFIG_BYTES, {
      headers: { 'content-type': OCI_EMPTY, 'content-length': '2', 'docker-content-digest': digest, 'cache-control': immutable(env) },
    });
  }
  const key = await readLayerKey(env.REGISTRY_R2, repo, hex);
  const missing = () => ociError(404, 'BLOB_UNKNOWN', `${digest} is not a blob of this repository`);
  if (!key) return missing();
  const served = await serveR2Object(request, env.REGISTRY_R2, key, {
    contentType: 'application/octet-stream',
    cacheControl: immutable(env),
    missing,
    edgeCache: edgeCacheFor(request, ctx),
  });
  if (served.status >= 400 && served.status !== 416 && served.status !== 412) return served;
  const response = new Response(served.body, served);
  response.headers.set('docker-content-digest', digest);
  return response;
}

/**
 * GET /v2/REPO/tags/list[?n=&last=] — `versions` as tags (`+` as `_`) in
 * lexical order, cut after `last` to `n` with a Link to the next page;
 * NAME_UNKNOWN when there are none. 400 for an `n` that is not a whole number.
 */
export function tagList(request: IRequest, name: string, versions: readonly string[], env: Env): Response {
  if (versions.length === 0) return ociError(404, 'NAME_UNKNOWN', `repository ${name} is not known to this registry`);
  const url = new URL(request.url);
  const rawN = url.searchParams.get('n');
  if (rawN !== null && !/^\d{1,6}$/.test(rawN)) return ociError(400, 'UNSUPPORTED', `n must be a whole number, not "${rawN.slice(0, 40)}"`);
  const { tags, more } = pageOfTags(versions.map(versionTag), rawN === null ? null : Number(rawN), url.searchParams.get('last'));
  const headers: Record<string, string> = { 'content-type': 'application/json', 'cache-control': settings(env).listCacheControl };
  if (more) headers.link = `</v2/${name}/tags/list?n=${rawN}&last=${encodeURIComponent(tags.at(-1)!)}>; rel="next"`;
  return new Response(JSON.stringify({ name, tags }), { headers });
}

/** GET /v2/REPO/referrers/sha256:… — always an empty image index: nothing here refers to another manifest. */
export async function referrers(request: IRequest): Promise<Response> {
  parseDigest(pathSegment(request.params.digest, 'digest'));
  return new Response(EMPTY_REFERRERS, { headers: { 'content-type': OCI_INDEX, 'cache-control': 'no-store' } });
}

/** GET /v2/ — 200 {} with Docker-Distribution-API-Version (the guard answered 401 first in private mode without a credential). */
export async function ociBase(): Promise<Response> {
  return new Response('{}', {
    headers: { 'content-type': 'application/json', 'docker-distribution-api-version': 'registry/2.0', 'cache-control': 'no-store' },
  });
}

/** Any other /v2/ path or method: 404 NAME_UNKNOWN (GET/HEAD) or 405 UNSUPPORTED (this view is read-only). */
export async function ociOther(request: IRequest): Promise<Response> {
  if (request.method === 'GET' || request.method === 'HEAD')
    return ociError(404, 'NAME_UNKNOWN', `${new URL(request.url).pathname} is not a route of this read-only registry`);
  return ociError(405, 'UNSUPPORTED', `this registry is read-only: ${request.method} is not supported`, { allow: 'GET, HEAD' });
}
