import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { providerAddress } from '../protocol/address';
import { moduleAddress } from '../protocol/modules-v1';
import { parseReleaseFilename } from '../protocol/release-files';
import { pathSegment } from '../http/responses';
import { parseVersion } from '../protocol/version';
import { countDownload, isDownload } from './count';
import { moduleCounterName, providerCounterName } from './names';
import { settings } from '../config';

/**
 * The archive routes with counting (src/index.ts wraps them): the handler
 * answers as before; a provider zip or a module package it served as a
 * download (isDownload) is counted for its version and platform. Release
 * files that are not archives (SHA256SUMS, signatures) are not downloads.
 * The handler validated every path part before it answered, so parsing
 * them again here cannot fail for a response that counts.
 *
 * With RELEASE_FILES=r2 the archives go from R2 to the client without the
 * Worker, so downloads are counted from the download documents instead
 * (countingDownloadDocuments, countingModuleDownloads) and the archive routes
 * — still there for old links and pages — count nothing, so nothing counts
 * twice. What is lost then: a find-a-package answer counts whether or not the
 * client goes on to fetch the archive (Terraform always does unless its
 * plugin cache already holds it, so cached installs now count), and the
 * network mirror's VERSION.json names every platform, so installs through
 * the mirror are not counted at all.
 */

type Handler = (request: IRequest, env: Env, ctx?: ExecutionContext) => Promise<Response>;

/** GET /v1/archives/:hostname/:namespace/:type/:version/:file, counted per version and platform. */
export function countingProviderArchives(handler: Handler): Handler {
  return async (request, env, ctx) => {
    const response = await handler(request, env, ctx);
    if (!isDownload(request, response) || settings(env).r2Files) return response;
    const { hostname, namespace, type, version, file } = decoded(request);
    const parsed = parseReleaseFilename(file);
    if (parsed?.kind === 'archive' && parsed.platform) {
      countDownload(env, ctx, providerCounterName(providerAddress(hostname, namespace, type)), version, parsed.platform);
    }
    return response;
  };
}

/** GET /v1/module-archives/:hostname/:namespace/:name/:system/:version/:file, counted per version. */
export function countingModuleArchives(handler: Handler): Handler {
  return async (request, env, ctx) => {
    const response = await handler(request, env, ctx);
    if (!isDownload(request, response) || settings(env).r2Files) return response;
    const { hostname, namespace, name, system, version } = decoded(request);
    countDownload(env, ctx, moduleCounterName(moduleAddress(hostname, namespace, name, system)), version, '');
    return response;
  };
}

/**
 * GET /v1/providers/:namespace/:type/:version/download/:os/:arch with
 * RELEASE_FILES=r2: a 200 counts one download of that version and platform
 * (see above). Otherwise, and for HEAD or any other status, nothing.
 */
export function countingDownloadDocuments(handler: Handler): Handler {
  return async (request, env, ctx) => {
    const response = await handler(request, env, ctx);
    const config = settings(env);
    if (!config.r2Files || request.method !== 'GET' || response.status !== 200) return response;
    const { namespace, type, version } = decoded(request);
    const platform = `${pathSegment(request.params.os, 'os')}_${pathSegment(request.params.arch, 'arch')}`.toLowerCase();
    countDownload(env, ctx, providerCounterName(providerAddress(config.hostname, namespace, type)), version, platform);
    return response;
  };
}

/**
 * GET /v1/modules/:namespace/:name/:system/:version/download with
 * RELEASE_FILES=r2: the 204 (X-Terraform-Get) counts one download of that
 * version. Otherwise, and for HEAD or any other status, nothing.
 */
export function countingModuleDownloads(handler: Handler): Handler {
  return async (request, env, ctx) => {
    const response = await handler(request, env, ctx);
    const config = settings(env);
    if (!config.r2Files || request.method !== 'GET' || response.status !== 204) return response;
    const { namespace, name, system, version } = decoded(request);
    countDownload(env, ctx, moduleCounterName(moduleAddress(config.hostname, namespace, name, system)), version, '');
    return response;
  };
}

function decoded(request: IRequest): Record<'hostname' | 'namespace' | 'type' | 'name' | 'system' | 'version' | 'file', string> {
  const part = (key: string) => (request.params[key] === undefined ? '' : pathSegment(request.params[key], key));
  return {
    hostname: part('hostname'),
    namespace: part('namespace'),
    type: part('type'),
    name: part('name'),
    system: part('system'),
    version: parseVersion(part('version')),
    file: part('file'),
  };
}
