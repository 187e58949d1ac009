import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { settings, releaseFileCacheControl } from '../config';
import { documentResponse, notFound, pathSegment } from '../http/responses';
import { signedPathInWindow, signingWindow } from '../access/signed-urls';
import { presignedR2Url } from '../access/r2-urls';
import { InputError } from '../protocol/errors';
import { formatModuleAddress, TERRAFORM_GET_HEADER, type ModuleDownloadBody } from '../protocol/modules-v1';
import { parseVersion } from '../protocol/version';
import { moduleArchiveFilename, moduleObjectKey } from '../store/layout';
import { readModuleDownload, readModuleVersions } from '../store/modules/read';
import { edgeCacheFor } from '../store/edge-cache';
import { serveR2Object } from '../http/r2-object';
import { directModuleDownloadBody, wantsDirectModuleDownload } from './module-download-form';
import { requestModuleAddress } from './params';

/**
 * GET /v1/modules/:namespace/:name/:system/versions — modules.v1 "list
 * available versions": 200 with the stored body
 * {"modules":[{"versions":[{"version":"2.1.0"},…]}]} (newest first); 404
 * {"errors":[…]} for an unknown module; 400 for a malformed part. One KV read
 * at most (isolate-cached for INDEX_CACHE_SECONDS).
 */
export async function listModuleVersions(request: IRequest, env: Env): Promise<Response> {
  const config = settings(env);
  const address = requestModuleAddress(request, config.hostname);
  const document = await readModuleVersions(env.REGISTRY_KV, address, config.listTtlMs);
  if (document === null) return notFound(`module ${formatModuleAddress(address)} not found`);
  return documentResponse(request, document, config.listCacheControl, { compress: config.gzipDocuments });
}

/**
 * GET /v1/modules/:namespace/:name/:system/:version/download — modules.v1
 * "download a specific version": 204 No Content with X-Terraform-Get set to
 * the package's path-absolute URL (on ARCHIVE_BASE_URL when set; signed and
 * short-lived in private mode, since the client fetches it without
 * credentials). 404 for an unknown module or version; 400 for malformed parts.
 * One KV read at most (the version's immutable download document).
 */
export async function moduleDownload(request: IRequest, env: Env): Promise<Response> {
  const config = settings(env);
  const address = requestModuleAddress(request, config.hostname);
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const document = await readModuleDownload(env.REGISTRY_KV, env.REGISTRY_R2, address, version, config.listTtlMs);
  if (document === null) return notFound(`module ${formatModuleAddress(address)} has no version ${version}`);
  const { location } = JSON.parse(document.text) as ModuleDownloadBody;
  return moduleDownloadAnswer(request, env, location);
}

/**
 * The download answer for a package at `location` (path-absolute): 204 with
 * X-Terraform-Get (signed in private mode; a presigned R2 URL with
 * RELEASE_FILES=r2), or OpenTofu ≥ 1.12's JSON form (always the Worker's
 * route: OpenTofu sends its registry token with it, which R2 would refuse
 * next to a presigned query).
 */
export async function moduleDownloadAnswer(request: IRequest, env: Env, location: string): Promise<Response> {
  const config = settings(env);
  // OpenTofu ≥ 1.12: the JSON form; it fetches the package with its registry token (src/routes/module-download-form.ts).
  if (wantsDirectModuleDownload(request.headers.get('user-agent'))) {
    return new Response(directModuleDownloadBody(config.archiveBaseUrl + location), {
      headers: { 'content-type': 'application/json', 'cache-control': config.releaseDocumentCacheControl, vary: 'User-Agent' },
    });
  }
  let served = location;
  if (config.r2Files) {
    // RELEASE_FILES=r2: the package straight from R2, presigned (src/access/r2-urls.ts); absolute, so no ARCHIVE_BASE_URL.
    const { signedAt } = signingWindow(config, Date.now());
    const url = await presignedR2Url(config.r2Files, location, signedAt, config.signedUrlMinutes * 60);
    return new Response(null, {
      status: 204,
      headers: { [TERRAFORM_GET_HEADER]: url, 'cache-control': config.releaseDocumentCacheControl, vary: 'User-Agent' },
    });
  }
  if (config.access === 'private') served = await signedPathInWindow(config, location);
  return new Response(null, {
    status: 204,
    headers: { [TERRAFORM_GET_HEADER]: config.archiveBaseUrl + served, 'cache-control': config.releaseDocumentCacheControl, vary: 'User-Agent' },
  });
}

/**
 * GET|HEAD /v1/module-archives/:hostname/:namespace/:name/:system/:version/:file
 * — a module package served exactly like release files (serveR2Object:
 * RFC 9110 conditionals and ranges, edge cache, immutable caching; in private
 * mode the URL must be signed, see src/index.ts). 404 unless `file` is
 * NAME-SYSTEM-VERSION.tar.gz or .zip and stored; 400 for malformed parts.
 */
export async function moduleArchive(request: IRequest, env: Env, ctx?: ExecutionContext): Promise<Response> {
  const address = requestModuleAddress(request, pathSegment(request.params.hostname, 'hostname'));
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const filename = pathSegment(request.params.file, 'file');
  const contentType =
    filename === moduleArchiveFilename(address, version, 'tar.gz')
      ? 'application/gzip'
      : filename === moduleArchiveFilename(address, version, 'zip')
        ? 'application/zip'
        : null;
  if (contentType === null) {
    throw new InputError(`${filename} is not a package of module ${address.namespace}/${address.name}/${address.system} ${version}`, 404);
  }
  return serveR2Object(request, env.REGISTRY_R2, moduleObjectKey(address, version, filename), {
    contentType,
    cacheControl: releaseFileCacheControl(request, env),
    missing: () => notFound(`${filename} not found`),
    edgeCache: edgeCacheFor(request, ctx),
  });
}
