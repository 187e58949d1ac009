import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { settings } from '../config';
import { servedDocument } from '../access/release-urls';
import { documentResponse, notFound, pathSegment } from '../http/responses';
import { edgeCacheFor } from '../store/edge-cache';
import { formatAddress } from '../protocol/address';
import { requestAddress } from './params';
import { parsePlatform } from '../protocol/platform';
import { parseVersion } from '../protocol/version';
import { readDownloadDocument, readVersionsDocument } from '../store/providers/read';

/**
 * GET /v1/providers/:namespace/:type/versions — providers.v1 "list available
 * versions" for a provider of this registry's hostname. 200 with the stored
 * body; 404 {"errors":[…]} when no version is published; 400 for a malformed
 * namespace or type.
 */
export async function listVersions(request: IRequest, env: Env): Promise<Response> {
  const config = settings(env);
  const address = requestAddress(request, config.hostname);
  const document = await readVersionsDocument(env.REGISTRY_KV, address, config.listTtlMs);
  if (document === null) return notFound(`provider ${formatAddress(address)} not found`);
  return documentResponse(request, document, config.listCacheControl, { compress: config.gzipDocuments });
}

/**
 * GET /v1/providers/:namespace/:type/:version/download/:os/:arch —
 * providers.v1 "find a provider package". 200 with the stored body (os and
 * arch echo the request; OpenTofu's `packages` lists every platform); 404 when
 * that version or platform is not published; 400 for malformed parts. The
 * stored body comes from the isolate, else the location's edge cache, else KV
 * (and then goes into the edge cache). Its release-file URLs are served
 * absolute on the request's origin (and signed in private mode): the
 * rewritten text is kept per origin in the isolate and compressed once
 * (servedDocument), so a repeat request neither rewrites nor compresses.
 */
export async function findPackage(request: IRequest, env: Env, ctx?: ExecutionContext): Promise<Response> {
  const config = settings(env);
  const address = requestAddress(request, config.hostname);
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const platform = parsePlatform(pathSegment(request.params.os, 'os'), pathSegment(request.params.arch, 'arch'));
  const document = await readDownloadDocument(env.REGISTRY_KV, env.REGISTRY_R2, address, version, platform, config.listTtlMs, edgeCacheFor(request, ctx));
  if (document === null) {
    return notFound(`provider ${formatAddress(address)} ${version} has no package for ${platform.os}_${platform.arch}`);
  }
  const url = new URL(request.url);
  const served = await servedDocument(document, env, url.pathname, url.origin);
  return documentResponse(request, served, config.releaseDocumentCacheControl, { compress: config.gzipDocuments });
}
