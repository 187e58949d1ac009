import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { settings } from '../config';
import { servedDocument } from '../access/release-urls';
import { documentResponse, notFound, pathSegment } from '../http/responses';
import { edgeCacheFor } from '../store/edge-cache';
import { formatAddress } from '../protocol/address';
import { requestAddress } from './params';
import { parseVersion } from '../protocol/version';
import { InputError } from '../protocol/errors';
import { readMirrorIndex, readMirrorVersion } from '../store/mirror/read';

/**
 * GET /v1/mirror/:hostname/:namespace/:type/index.json — network mirror
 * "list available versions"; GET …/:version.json — "list available
 * installation packages". Serves any hostname whose providers are stored
 * (our own and mirrored upstream ones; an upstream version's document is
 * cached like a list, since a mirror sync may add platforms). 404 when the provider or version is
 * not stored or the file is neither; 400 for malformed parts. VERSION.json
 * comes from the isolate, else the location's edge cache, else KV (and then
 * goes into the edge cache); index.json never goes to the edge cache.
 */
export async function mirrorDocument(request: IRequest, env: Env, ctx?: ExecutionContext): Promise<Response> {
  const config = settings(env);
  const address = requestAddress(request);
  const file = pathSegment(request.params.file, 'file');
  if (file === 'index.json') {
    const document = await readMirrorIndex(env.REGISTRY_KV, address, config.listTtlMs);
    if (document === null) return notFound(`provider ${formatAddress(address)} is not in this mirror`);
    return documentResponse(request, document, config.listCacheControl, { compress: config.gzipDocuments });
  }
  if (!file.endsWith('.json')) throw new InputError(`"${file}" is neither index.json nor VERSION.json`, 404);
  const version = parseVersion(file.slice(0, -'.json'.length));
  // A version mirrored from another registry gains platforms when the allow-list grows (npm run mirror),
  // so only our own providers' version documents are immutable.
  const own = address.hostname === config.hostname;
  const document = await readMirrorVersion(env.REGISTRY_KV, env.REGISTRY_R2, address, version, config.listTtlMs, own ? edgeCacheFor(request, ctx) : null, own);
  if (document === null) return notFound(`provider ${formatAddress(address)} ${version} is not in this mirror`);
  // Signed in private mode, on ARCHIVE_BASE_URL when set: rewritten and compressed once per signing window (servedDocument).
  const served = await servedDocument(document, env, new URL(request.url).pathname, null);
  return documentResponse(request, served, own ? config.releaseDocumentCacheControl : config.listCacheControl, { compress: config.gzipDocuments });
}
