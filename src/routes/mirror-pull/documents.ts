import type { IRequest } from 'itty-router';
import type { Env } from '../../env';
import { settings } from '../../config';
import { errorResponse, jsonBody, notFound, pathSegment } from '../../http/responses';
import { withReleaseUrls } from '../../access/release-urls';
import { formatAddress } from '../../protocol/address';
import { parseVersion, sortVersions } from '../../protocol/version';
import { releaseFilePath } from '../../store/layout';
import { readMirrorIndex, readMirrorVersion } from '../../store/mirror/read';
import { allowedUpstreamVersions, manifestFor, pullContext, upstreamVersions, type PullContext } from '../../mirror/pull-through';
import { noteUpstreamChange } from '../../mirror/changes';
import { UpstreamError } from '../../mirror/upstream-http';
import { mirrorDocument } from '../mirror';
import { requestAddress } from '../params';

/**
 * The network mirror's documents with pull-through (README "Pull-through"):
 * for a provider a policy rule matches, index.json lists the versions held
 * plus the upstream's versions the policy allows, and VERSION.json of an
 * allowed version adds, for every allowed platform not held yet, the archive
 * URL and the `zh:` hash of its line in the upstream's verified SHA256SUMS.
 * Providers outside the policy (and every provider without a policy) are
 * answered by mirrorDocument exactly as before. When the upstream cannot be
 * reached, what is held is served with `X-Mirror-Upstream: unreachable`;
 * with nothing held the answer is 502 naming the provider and the cause.
 */
export async function mirrorPullDocument(request: IRequest, env: Env, ctx?: ExecutionContext): Promise<Response> {
  const address = requestAddress(request);
  const pull = await pullContext(env, address);
  if (!pull) return mirrorDocument(request, env, ctx);
  const file = pathSegment(request.params.file, 'file');
  if (file === 'index.json') return pullIndex(pull);
  if (!file.endsWith('.json')) return mirrorDocument(request, env, ctx);
  return pullVersion(request, env, ctx, pull, parseVersion(file.slice(0, -'.json'.length)));
}

/** The header saying the upstream could not be asked and only what is held is listed. */
export const UNREACHABLE = 'x-mirror-upstream';

async function pullIndex(pull: PullContext): Promise<Response> {
  const config = settings(pull.env);
  const heldDocument = await readMirrorIndex(pull.env.REGISTRY_KV, pull.address, config.listTtlMs);
  const held = heldDocument ? Object.keys((JSON.parse(heldDocument.text) as { versions: Record<string, unknown> }).versions) : [];
  let upstream: string[];
  try {
    upstream = allowedUpstreamVersions(pull, (await upstreamVersions(pull)).versions).map((v) => v.version);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    const why = error.message;
    console.warn(`pull-through: ${formatAddress(pull.address)}: listing the upstream failed: ${why}`);
    if (held.length === 0)
      return upstreamFailure(error, `provider ${formatAddress(pull.address)} is not in this mirror and its upstream could not be listed: ${why}`);
    return versionsBody(held, config.listCacheControl, { [UNREACHABLE]: `unreachable; listing only the versions this mirror holds (${why.slice(0, 200)})` });
  }
  const versions = [...new Set([...held, ...upstream])];
  if (versions.length === 0) return notFound(`provider ${formatAddress(pull.address)}: the upstream offers no version the pull-through policy allows`);
  return versionsBody(versions, config.listCacheControl);
}

function versionsBody(versions: string[], cacheControl: string, headers: Record<string, string> = {}): Response {
  const body = JSON.stringify({ versions: Object.fromEntries(sortVersions(versions).map((v) => [v, {}])) });
  const response = jsonBody(body, cacheControl);
  for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
  return response;
}

interface MirrorVersionBody {
  archives: Record<string, { url: string; hashes: string[] }>;
}

async function pullVersion(request: IRequest, env: Env, ctx: ExecutionContext | undefined, pull: PullContext, version: string): Promise<Response> {
  const config = settings(env);
  const label = `${formatAddress(pull.address)} ${version}`;
  const heldDocument = await readMirrorVersion(env.REGISTRY_KV, null, pull.address, version, config.listTtlMs, null, false);
  if (!pull.allowance.allows(version)) {
    if (heldDocument) return mirrorDocument(request, env, ctx);
    return notFound(`provider ${label} is not in this mirror, and the pull-through policy does not allow this version`);
  }
  const body: MirrorVersionBody = heldDocument ? (JSON.parse(heldDocument.text) as MirrorVersionBody) : { archives: {} };
  const headers: Record<string, string> = {};
  try {
    const manifest = await manifestFor(pull, version);
    for (const pkg of manifest.packages) {
      const platform = `${pkg.os}_${pkg.arch}`;
      const ours = body.archives[platform];
      if (ours) {
        // Mirrored bytes never change: a different upstream shasum is recorded, ours stays.
        if (!ours.hashes.includes(`zh:${pkg.shasum}`))
          ctx?.waitUntil(noteUpstreamChange(env, pull.address, version, platform, ours.hashes, pkg.shasum, pkg.documentUrl));
        continue;
      }
      body.archives[platform] = { url: releaseFilePath(pull.address, version, pkg.filename), hashes: [`zh:${pkg.shasum}`] };
    }
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    const why = error.message;
    console.warn(`pull-through: ${label}: ${why}`);
    if (!heldDocument) return upstreamFailure(error, `provider ${label} is not in this mirror and could not be pulled through: ${why}`);
    headers[UNREACHABLE] = `unreachable; listing only the platforms this mirror holds (${why.slice(0, 200)})`;
  }
  const sorted: MirrorVersionBody = { archives: Object.fromEntries(Object.entries(body.archives).sort(([a], [b]) => a.localeCompare(b))) };
  const response = jsonBody(await withReleaseUrls(JSON.stringify(sorted), env), config.listCacheControl);
  for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
  return response;
}

/**
 * A failed upstream as the client's answer: its own status when it is one we
 * chose (404 not offered, 422 a module source the proxy cannot fetch, 504
 * timeout), else 502.
 */
export function upstreamFailure(error: unknown, message: string): Response {
  const status = (error as { status?: number }).status;
  return errorResponse(status === 404 || status === 422 || status === 504 ? status : 502, message);
}
