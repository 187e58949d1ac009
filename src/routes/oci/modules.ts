import type { IRequest } from 'itty-router';
import type { Env } from '../../env';
import { settings } from '../../config';
import { ociError } from '../../access/oci';
import { pathSegment } from '../../http/responses';
import { formatModuleAddress, type ModuleAddress, type ModuleVersionsBody } from '../../protocol/modules-v1';
import { parseReference, tagVersion } from '../../protocol/oci';
import { parseVersion } from '../../protocol/version';
import { ociModuleRepo } from '../../store/layout';
import { readModuleVersions } from '../../store/modules/read';
import { readModuleRecord } from '../../store/modules/record';
import { readModuleLifecyclePage } from '../../store/lifecycle/read';
import { withoutWithdrawn } from '../../store/lifecycle/state';
import { readTaggedManifest, writeModuleView } from '../../store/oci';
import { allowedUpstreamModuleVersions, moduleProxyContext, proxiedModuleRecord, type ModuleProxyContext } from '../../mirror/modules/proxy';
import { UpstreamError } from '../../mirror/upstream-http';
import { requestModuleAddress } from '../params';
import { blob, manifestByDigest, manifestResponse, ociRoute, referrers, tagList } from './respond';

/**
 * The OCI view of this registry's modules: repository
 * `modules/NS/NAME/SYSTEM`, each version an image manifest
 * (artifactType modulepkg) with one zip layer — the stored zip, or for a
 * package published as tar.gz the deterministic zip made from it once, on
 * the first OCI request for that version (src/store/oci.ts). Listed and
 * tagged: the versions modules.v1 lists (withdrawn ones are not) and those
 * the module proxy's policy allows upstream, proxied on the first OCI
 * request as on the first /v1/ download (proxiedModuleRecord).
 */

function ourAddress(request: IRequest, env: Env): ModuleAddress {
  return requestModuleAddress(request, settings(env).hostname);
}

/** The wire name of a module's repository: modules/NS/NAME/SYSTEM (the store's name carries the hostname too). */
const wireName = (address: ModuleAddress) => `modules/${address.namespace}/${address.name}/${address.system}`;

/** The versions modules.v1 lists for `address` (one KV read, kept in the isolate for INDEX_CACHE_SECONDS). */
async function heldVersions(env: Env, address: ModuleAddress): Promise<string[]> {
  const document = await readModuleVersions(env.REGISTRY_KV, address, settings(env).listTtlMs);
  return document ? (JSON.parse(document.text) as ModuleVersionsBody).modules[0].versions.map((v) => v.version) : [];
}

/** The upstream's versions the proxy allows, without withdrawn ones; [] without a proxy rule or when the upstream cannot be listed (logged). */
async function upstreamAllowed(env: Env, proxy: ModuleProxyContext | null): Promise<string[]> {
  if (!proxy) return [];
  let upstream: string[];
  try {
    upstream = await allowedUpstreamModuleVersions(proxy);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    console.warn(`oci: module ${formatModuleAddress(proxy.address)}: listing the upstream failed: ${error.message}`);
    return [];
  }
  const lifecycle = await readModuleLifecyclePage(env.REGISTRY_KV, proxy.address, settings(env).listTtlMs);
  return lifecycle ? withoutWithdrawn(upstream, lifecycle, (v) => v) : upstream;
}

/** GET /v2/modules/:namespace/:name/:system/tags/list */
export const moduleTags = ociRoute('NAME_UNKNOWN', async (request, env) => {
  const address = ourAddress(request, env);
  const held = await heldVersions(env, address);
  const upstream = await upstreamAllowed(env, await moduleProxyContext(env, address));
  return tagList(request, wireName(address), [...held, ...upstream], env);
});

/** GET|HEAD /v2/modules/:namespace/:name/:system/manifests/:reference — as providerManifest, for a module version's image manifest. */
export const moduleManifest = ociRoute('MANIFEST_UNKNOWN', async (request, env) => {
  const address = ourAddress(request, env);
  const repo = ociModuleRepo(address);
  const reference = parseReference(pathSegment(request.params.reference, 'reference'));
  if ('digest' in reference) return manifestByDigest(env, repo, `sha256:${reference.digest}`);
  const unknown = () => ociError(404, 'MANIFEST_UNKNOWN', `${wireName(address)} has no version ${reference.tag}`);
  let version: string;
  try {
    version = parseVersion(tagVersion(reference.tag));
  } catch {
    return unknown();
  }
  const store = { kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 };
  if ((await heldVersions(env, address)).includes(version)) {
    const stored = await readTaggedManifest(env.REGISTRY_R2, repo, version);
    if (stored) return manifestResponse(stored, env, false);
    const record = await readModuleRecord(store, address, version);
    if (record) return manifestResponse(await writeModuleView(env.REGISTRY_R2, repo, address, record), env, false);
    return unknown();
  }
  const proxy = await moduleProxyContext(env, address);
  if (!proxy?.allowance.allows(version) || !(await upstreamAllowed(env, proxy)).includes(version)) return unknown();
  const record = await proxiedModuleRecord(proxy, version);
  return manifestResponse(await writeModuleView(env.REGISTRY_R2, repo, address, record), env, false);
});

/** GET|HEAD /v2/modules/:namespace/:name/:system/blobs/:digest */
export const moduleBlob = ociRoute('BLOB_UNKNOWN', (request, env, ctx) => blob(request, env, ctx, ociModuleRepo(ourAddress(request, env))));

/** GET /v2/modules/:namespace/:name/:system/referrers/:digest */
export const moduleReferrers = ociRoute('MANIFEST_UNKNOWN', (request, env) => {
  ourAddress(request, env);
  return referrers(request);
});
