import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { releaseFileCacheControl } from '../config';
import { errorResponse, notFound, pathSegment } from '../http';
import { providerAddress, type ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { parseVersion } from '../protocol/version';
import { RELEASE_FILE_CONTENT_TYPE, servedReleaseFileKind } from '../protocol/release-files';
import { releaseObject } from '../store/read';

/**
 * GET|HEAD /v1/archives/:hostname/:namespace/:type/:version/:file — a
 * release file (zip, SHA256SUMS or SHA256SUMS.sig) streamed from R2, never
 * buffered. Sends Content-Length, ETag and long-lived Cache-Control; honours a
 * single byte Range (206, or 416 when unsatisfiable) and If-None-Match (304).
 * 404 when the file is not stored or its name is not a release file name of
 * that provider and version; 400 for malformed parts.
 */
export async function releaseFile(request: IRequest, env: Env): Promise<Response> {
  const address = providerAddress(
    pathSegment(request.params.hostname, 'hostname'),
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.type, 'type'),
  );
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const filename = pathSegment(request.params.file, 'file');
  const contentType = releaseFileContentType(address, version, filename);
  const key = releaseObject(address, version, filename);
  const missing = () => notFound(`${filename} not found`);
  const cacheControl = releaseFileCacheControl(request, env);

  if (request.method === 'HEAD') {
    const object = await env.REGISTRY_R2.head(key);
    if (!object) return missing();
    return new Response(null, { headers: fileHeaders(object, contentType, cacheControl, object.size) });
  }

  const range = parseRange(request.headers.get('range'));
  if (range === 'invalid') return errorResponse(416, 'Range must be a single "bytes=START-END" range');
  let object: R2ObjectBody | R2Object | null;
  try {
    object = await env.REGISTRY_R2.get(key, { onlyIf: request.headers, ...(range ? { range } : {}) });
  } catch (error) {
    // R2 rejects a range that starts past the end of the object.
    const head = await env.REGISTRY_R2.head(key);
    if (!head) return missing();
    if (range) return unsatisfiable(head.size);
    throw error;
  }
  if (!object) return missing();
  if (!('body' in object)) {
    return new Response(null, { status: 304, headers: fileHeaders(object, contentType, cacheControl, undefined) });
  }
  if (range && object.range) {
    const { offset, length } = resolvedRange(object.range, object.size);
    if (offset >= object.size) return unsatisfiable(object.size);
    const headers = fileHeaders(object, contentType, cacheControl, length);
    headers.set('content-range', `bytes ${offset}-${offset + length - 1}/${object.size}`);
    return new Response(object.body, { status: 206, headers });
  }
  return new Response(object.body, { headers: fileHeaders(object, contentType, cacheControl, object.size) });
}

/** Throws a 404 InputError unless `filename` is one of the names a release of this provider and version has. */
function releaseFileContentType(address: ProviderAddress, version: string, filename: string): string {
  const kind = servedReleaseFileKind(address.type, version, filename);
  if (kind) return RELEASE_FILE_CONTENT_TYPE[kind];
  throw new InputError(`${filename} is not a release file of ${address.type} ${version}`, 404);
}

function fileHeaders(object: R2Object, contentType: string, cacheControl: string, length: number | undefined): Headers {
  const headers = new Headers({
    'content-type': contentType,
    etag: object.httpEtag,
    'cache-control': cacheControl,
    'accept-ranges': 'bytes',
  });
  if (length !== undefined) headers.set('content-length', String(length));
  return headers;
}

function unsatisfiable(size: number): Response {
  return errorResponse(416, 'requested range not satisfiable', { 'content-range': `bytes */${size}` });
}

type ByteRange = { offset: number; length?: number } | { suffix: number };

/** Parses a single-range "bytes=" header; null when absent, 'invalid' when malformed or multi-range. */
function parseRange(header: string | null): ByteRange | null | 'invalid' {
  if (header === null) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return 'invalid';
  if (match[1] === '') return { suffix: Number(match[2]) };
  const offset = Number(match[1]);
  if (match[2] === '') return { offset };
  const end = Number(match[2]);
  if (end < offset) return 'invalid';
  return { offset, length: end - offset + 1 };
}

function resolvedRange(range: R2Range, size: number): { offset: number; length: number } {
  // R2 reports every field, with undefined for the ones that do not apply.
  if ('suffix' in range && range.suffix !== undefined) {
    const length = Math.min(range.suffix, size);
    return { offset: size - length, length };
  }
  const { offset = 0, length: requested } = range as { offset?: number; length?: number };
  const length = Math.min(requested ?? size - offset, size - offset);
  return { offset, length };
}
