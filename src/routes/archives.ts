import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { releaseFileCacheControl } from '../config';
import { notFound, pathSegment } from '../http/responses';
import { edgeCacheFor } from '../store/edge-cache';
import { serveR2Object } from '../http/r2-object';
import { providerAddress, type ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { parseVersion } from '../protocol/version';
import { RELEASE_FILE_CONTENT_TYPE, servedReleaseFileKind } from '../protocol/release-files';
import { releaseObjectKey } from '../store/layout';

/**
 * GET|HEAD /v1/archives/:hostname/:namespace/:type/:version/:file — a
 * release file (zip, SHA256SUMS or SHA256SUMS.sig), streamed from the
 * location's edge cache or R2, never buffered, with RFC 9110 semantics
 * (serveR2Object): ETag, Last-Modified, long-lived Cache-Control (private and
 * bounded by the signed URL in private mode), If-None-Match /
 * If-Modified-Since → 304, failed If-Match / If-Unmodified-Since → 412, one
 * byte Range → 206 (416 when unsatisfiable; malformed or multiple ranges are
 * ignored → 200), If-Range; HEAD answers as GET would, without a body.
 * 404 when the file is not stored or its name is not a release file name of
 * that provider and version; 400 for malformed parts.
 */
export async function releaseFile(request: IRequest, env: Env, ctx?: ExecutionContext): Promise<Response> {
  const { address, version, filename } = releaseFileParams(request);
  return serveR2Object(request, env.REGISTRY_R2, releaseObjectKey(address, version, filename), {
    contentType: releaseFileContentType(address, version, filename),
    cacheControl: releaseFileCacheControl(request, env),
    missing: () => notFound(`${filename} not found`),
    edgeCache: edgeCacheFor(request, ctx),
  });
}

/** Throws a 404 InputError unless `filename` is one of the names a release of this provider and version has. */
function releaseFileContentType(address: ProviderAddress, version: string, filename: string): string {
  const kind = servedReleaseFileKind(address.type, version, filename);
  if (kind) return RELEASE_FILE_CONTENT_TYPE[kind];
  throw new InputError(`${filename} is not a release file of ${address.type} ${version}`, 404);
}

/** The provider, version and file name a release file route names; InputError (400) for a malformed part. */
export function releaseFileParams(request: IRequest): { address: ProviderAddress; version: string; filename: string } {
  const address = providerAddress(
    pathSegment(request.params.hostname, 'hostname'),
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.type, 'type'),
  );
  return { address, version: parseVersion(pathSegment(request.params.version, 'version')), filename: pathSegment(request.params.file, 'file') };
}
