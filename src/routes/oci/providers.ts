import type { IRequest } from 'itty-router';
import type { Env } from '../../env';
import { settings } from '../../config';
import { ociError } from '../../access/oci';
import { pathSegment } from '../../http/responses';
import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { UpstreamError } from '../../mirror/upstream-http';
import { parseReference, tagVersion } from '../../protocol/oci';
import { parseVersion } from '../../protocol/version';
import { ociProviderRepo, releaseFilePath } from '../../store/layout';
import { readMirrorIndex } from '../../store/mirror/read';
import { readTaggedManifest, writeProviderView } from '../../store/oci';
import { readVersionRecord } from '../../store/providers/version-records';
import type { VersionRecord } from '../../store/types';
import { allowedUpstreamVersions, manifestFor, pullContext, upstreamVersions, type PullContext } from '../../mirror/pull-through';
import { pullReleaseFile } from '../mirror-pull/archive';
import { requestAddress } from '../params';
import { blob, manifestByDigest, manifestResponse, ociRoute, referrers, tagList } from './respond';

/**
 * The OCI view of providers: repository `providers/HOST/NS/TYPE` for every
 * hostname the mirror serves (ours, synced upstreams, pulled-through ones),
 * each version an image index with one manifest per platform whose one
 * layer is the stored zip (src/store/oci.ts). A version is listed and tagged
 * when the network mirror lists it (withdrawn versions are not), or when the
 * pull-through policy allows it upstream: then the OCI request pulls it as
 * `/v1/archives/…` requests would (pullReleaseFile, every allowed platform)
 * before its index is written — an index is written once, so it must hold
 * every platform.
 */

/** The repository's wire name (and store name): providers/HOST/NS/TYPE. */
const repositoryOf = (address: ProviderAddress) => ociProviderRepo(address);

/** The versions the network mirror lists for `address` (one KV read, kept in the isolate for INDEX_CACHE_SECONDS). */
async function heldVersions(env: Env, address: ProviderAddress): Promise<string[]> {
  const document = await readMirrorIndex(env.REGISTRY_KV, address, settings(env).listTtlMs);
  return document ? Object.keys((JSON.parse(document.text) as { versions: Record<string, unknown> }).versions) : [];
}

/** The upstream's versions the policy allows, [] when there is no policy for it or the upstream cannot be listed (logged). */
async function upstreamAllowed(pull: PullContext | null): Promise<string[]> {
  if (!pull) return [];
  try {
    return allowedUpstreamVersions(pull, (await upstreamVersions(pull)).versions).map((v) => v.version);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    console.warn(`oci: ${formatAddress(pull.address)}: listing the upstream failed: ${error.message}`);
    return [];
  }
}

/** GET /v2/providers/:hostname/:namespace/:type/tags/list — held versions plus those pull-through allows. */
export const providerTags = ociRoute('NAME_UNKNOWN', async (request, env) => {
  const address = requestAddress(request);
  const held = await heldVersions(env, address);
  const upstream = await upstreamAllowed(await pullContext(env, address));
  return tagList(request, repositoryOf(address), [...held, ...upstream], env);
});

/**
 * GET|HEAD /v2/providers/:hostname/:namespace/:type/manifests/:reference —
 * by digest: the stored bytes; by tag: the version's stored index, written
 * from its record on the first request (MANIFEST_UNKNOWN for a tag that is
 * no listed version: unknown, withdrawn, or not a version at all).
 */
export const providerManifest = ociRoute('MANIFEST_UNKNOWN', async (request, env, ctx) => {
  const address = requestAddress(request);
  const repo = repositoryOf(address);
  const reference = parseReference(pathSegment(request.params.reference, 'reference'));
  if ('digest' in reference) return manifestByDigest(env, repo, `sha256:${reference.digest}`);
  const version = versionOfTag(reference.tag);
  const unknown = () => ociError(404, 'MANIFEST_UNKNOWN', `${repo} has no version ${reference.tag}`);
  if (version === null) return unknown();
  const held = (await heldVersions(env, address)).includes(version);
  if (held) {
    const stored = await readTaggedManifest(env.REGISTRY_R2, repo, version);
    if (stored) return manifestResponse(stored, env, false);
  }
  const pull = await pullContext(env, address);
  if (!held && !pull?.allowance.allows(version)) return unknown();
  let record = await readVersionRecord({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, address, version);
  if (pull?.allowance.allows(version)) record = await pullEveryPlatform(request, env, ctx, pull, version, record);
  if (!record) return unknown();
  return manifestResponse(await writeProviderView(env.REGISTRY_R2, repo, address, record), env, false);
});

/** The version a tag names, or null when it is not a version (`latest`, `v1.2.3`). */
function versionOfTag(tag: string): string | null {
  try {
    return parseVersion(tagVersion(tag));
  } catch {
    return null;
  }
}

/**
 * Pulls every platform of `version` the policy allows and the record lacks,
 * one at a time, through the pull-through's own archive route
 * (pullReleaseFile: lease, verification against the signed SHA256SUMS,
 * commit), reading each body to its end; returns the record then committed.
 * Throws UpstreamError (its status) when the upstream fails.
 */
async function pullEveryPlatform(
  request: IRequest,
  env: Env,
  ctx: ExecutionContext | undefined,
  pull: PullContext,
  version: string,
  record: VersionRecord | null,
): Promise<VersionRecord | null> {
  const manifest = await manifestFor(pull, version);
  const held = new Set(record?.packages.map((p) => p.filename) ?? []);
  const missing = manifest.packages.filter((p) => !held.has(p.filename));
  if (missing.length === 0) return record;
  for (const pkg of missing) {
    const { hostname, namespace, type } = pull.address;
    const url = new URL(releaseFilePath(pull.address, version, pkg.filename), request.url);
    const archive = Object.assign(new Request(url), { params: { hostname, namespace, type, version, file: pkg.filename }, query: {} }) as unknown as IRequest;
    const response = await pullReleaseFile(archive, env, ctx);
    if (!response.ok) {
      const message = await response.text();
      throw new UpstreamError(
        `${formatAddress(pull.address)} ${version} ${pkg.os}_${pkg.arch} could not be pulled through: ${message.slice(0, 300)}`,
        response.status === 404 ? 404 : 502,
      );
    }
    await response.body?.pipeTo(new WritableStream());
  }
  return readVersionRecord({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, pull.address, version);
}

/** GET|HEAD /v2/providers/:hostname/:namespace/:type/blobs/:digest */
export const providerBlob = ociRoute('BLOB_UNKNOWN', (request, env, ctx) => blob(request, env, ctx, repositoryOf(requestAddress(request))));

/** GET /v2/providers/:hostname/:namespace/:type/referrers/:digest */
export const providerReferrers = ociRoute('MANIFEST_UNKNOWN', (request) => {
  requestAddress(request);
  return referrers(request);
});
