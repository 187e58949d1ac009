import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { providerAddress } from '../protocol/address';
import { moduleAddress } from '../protocol/modules-v1';
import { parseReleaseFilename } from '../protocol/release-files';
import { pathSegment } from '../http/responses';
import { parseVersion } from '../protocol/version';
import { countDownload, isDownload } from './count';
import { moduleCounterName, providerCounterName } from './names';

/**
 * The archive routes with counting (src/index.ts wraps them): the handler
 * answers as before; a provider zip or a module package it served as a
 * download (isDownload) is counted for its version and platform. Release
 * files that are not archives (SHA256SUMS, signatures) are not downloads.
 * The handler validated every path part before it answered, so parsing
 * them again here cannot fail for a response that counts.
 */

type Handler = (request: IRequest, env: Env, ctx?: ExecutionContext) => Promise<Response>;

/** GET /v1/archives/:hostname/:namespace/:type/:version/:file, counted per version and platform. */
export function countingProviderArchives(handler: Handler): Handler {
  return async (request, env, ctx) => {
    const response = await handler(request, env, ctx);
    if (!isDownload(request, response)) return response;
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
    if (!isDownload(request, response)) return response;
    const { hostname, namespace, name, system, version } = decoded(request);
    countDownload(env, ctx, moduleCounterName(moduleAddress(hostname, namespace, name, system)), version, '');
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
