import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { settings } from '../config';
import { jsonBody, notFound, pathSegment } from '../http/responses';
import { formatModuleAddress, moduleVersionsBody, type ModuleAddress, type ModuleVersionsBody } from '../protocol/modules-v1';
import { parseVersion } from '../protocol/version';
import { moduleArchivePath } from '../store/layout';
import { readModuleDownload, readModuleVersions } from '../store/modules/read';
import { compareVersionsDescending } from '../protocol/version';
import { readModuleLifecyclePage } from '../store/lifecycle/read';
import { withoutWithdrawn } from '../store/lifecycle/state';
import { allowedUpstreamModuleVersions, moduleProxyContext, proxiedLabel, proxiedModuleRecord, type ModuleProxyContext } from '../mirror/modules/proxy';
import { checkModuleKeys } from '../store/key-limits';
import { UpstreamError } from '../mirror/upstream-http';
import { listModuleVersions, moduleDownload, moduleDownloadAnswer } from './modules';
import { UNREACHABLE, upstreamFailure } from './mirror-pull/documents';
import { requestModuleAddress } from './params';

/**
 * modules.v1 with the module proxy (src/mirror/modules/proxy.ts). A module
 * no policy rule proxies is answered by routes/modules.ts exactly as before.
 * A proxied one: `versions` lists the versions held plus the upstream's
 * versions the policy allows (with the upstream unreachable, what is held,
 * and `X-Mirror-Upstream: unreachable; …`; versions withdrawn here stay
 * out); `download` of an allowed version
 * not held yet proxies it first, then answers like any held version. In
 * private mode the route guards run before these handlers, so an
 * unauthorised request never reaches the upstream.
 */

function ourAddress(request: IRequest, env: Env): ModuleAddress {
  return requestModuleAddress(request, settings(env).hostname);
}

/** GET …/versions with the proxy. */
export async function proxiedModuleVersions(request: IRequest, env: Env): Promise<Response> {
  const address = ourAddress(request, env);
  const proxy = await moduleProxyContext(env, address);
  if (!proxy) return listModuleVersions(request, env);
  const config = settings(env);
  const document = await readModuleVersions(env.REGISTRY_KV, address, config.listTtlMs);
  const held = document ? (JSON.parse(document.text) as ModuleVersionsBody).modules[0].versions.map((v) => v.version) : [];
  let upstream: string[];
  try {
    upstream = await allowedUpstreamModuleVersions(proxy);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    console.warn(`module proxy: ${formatModuleAddress(address)}: listing the upstream failed: ${error.message}`);
    if (held.length === 0)
      return upstreamFailure(error, `module ${formatModuleAddress(address)} is not held here and its upstream could not be listed: ${error.message}`);
    const response = versionsBody(held, config.listCacheControl);
    response.headers.set(UNREACHABLE, `unreachable; listing only the versions this registry holds (${error.message.slice(0, 200)})`);
    return response;
  }
  // A version the operator withdrew (npm run lifecycle) leaves our list; the upstream's list must not bring it back.
  const lifecycle = await readModuleLifecyclePage(env.REGISTRY_KV, address, config.listTtlMs);
  const versions = [...new Set([...held, ...(lifecycle ? withoutWithdrawn(upstream, lifecycle, (v) => v) : upstream)])];
  if (versions.length === 0) {
    return notFound(`module ${formatModuleAddress(address)}: ${formatModuleAddress(proxy.allowance.upstream)} offers no version the proxy policy allows`);
  }
  return versionsBody(versions, config.listCacheControl);
}

function versionsBody(versions: string[], cacheControl: string): Response {
  return jsonBody(JSON.stringify(moduleVersionsBody([...versions].sort(compareVersionsDescending))), cacheControl);
}

/** GET …/VERSION/download with the proxy. */
export async function proxiedModuleDownload(request: IRequest, env: Env): Promise<Response> {
  const address = ourAddress(request, env);
  const proxy = await moduleProxyContext(env, address);
  if (!proxy) return moduleDownload(request, env);
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  // KV refuses a key over 512 bytes (the binding throws): checked before the read of the version's download key.
  checkModuleKeys(address, version, proxiedLabel(proxy, version));
  const held = await readModuleDownload(env.REGISTRY_KV, env.REGISTRY_R2, address, version, settings(env).listTtlMs);
  if (held) return moduleDownload(request, env);
  if (!proxy.allowance.allows(version)) {
    return notFound(
      `module ${formatModuleAddress(address)} has no version ${version}, and the proxy policy does not allow it from ${formatModuleAddress(proxy.allowance.upstream)}`,
    );
  }
  return pullAndAnswer(request, env, proxy, version);
}

async function pullAndAnswer(request: IRequest, env: Env, proxy: ModuleProxyContext, version: string): Promise<Response> {
  try {
    const record = await proxiedModuleRecord(proxy, version);
    return moduleDownloadAnswer(request, env, moduleArchivePath(record.address, record.version, record.filename));
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    return upstreamFailure(
      error,
      `module ${formatModuleAddress(proxy.address)} ${version} could not be proxied from ${formatModuleAddress(proxy.allowance.upstream)}: ${error.message}`,
    );
  }
}
