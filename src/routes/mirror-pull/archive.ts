import type { IRequest } from 'itty-router';
import type { Env } from '../../env';
import { releaseFileCacheControl } from '../../config';
import { errorResponse, notFound, pathSegment } from '../../http/responses';
import { formatAddress, providerAddress, type ProviderAddress } from '../../protocol/address';
import { servedReleaseFileKind } from '../../protocol/release-files';
import { checkProviderExecutable, executableProblem } from '../../protocol/provider-executable';
import { parseVersion } from '../../protocol/version';
import { pullLeaseName, releaseObjectKey } from '../../store/layout';
import { acquireLease, type Lease } from '../../store/lease';
import { commitPulledPackage, readManifest, storePulledArchive, type PullManifest } from '../../store/mirror/pull';
import { storePulledArchiveInParts } from '../../store/mirror/pull-parts';
import { readVersionRecord } from '../../store/providers/version-records';
import { manifestFor, pullContext, type PullContext } from '../../mirror/pull-through';
import { UpstreamError } from '../../mirror/upstream-http';
import { verifiedCopy } from '../../mirror/verified-copy';
import { zipDigest } from '../../mirror/zip-digest';
import { notePull } from '../../mirror/changes';
import { releaseFile } from '../archives';
import { upstreamFailure } from './documents';

/**
 * GET|HEAD /v1/archives/… with pull-through: what R2 holds is served as
 * before (releaseFile). An archive not held, of a version and platform the
 * policy allows, is fetched by exactly one request at a time (the version's
 * pull lease, an R2 object created with If-None-Match: *): it streams the
 * upstream's bytes to the client and into R2 at once, verified against the
 * signed SHA256SUMS line (src/mirror/verified-copy.ts: a mismatch errors both
 * streams, so R2 stores nothing and the client's download is aborted), then
 * computes h1, checks the provider executable and commits the version record
 * (storeMirroredVersion under the provider lease) — all before the client's
 * last block, so the work is part of the request, not a waitUntil with its
 * time limit — and releases the lease.
 * An upstream that sends no Content-Length is read the same way into an R2
 * multipart upload (src/store/mirror/pull-parts.ts) and the client is served
 * from R2 once it verified and committed (a 502 naming the failure otherwise):
 * a chunked download cut short may look complete behind a proxy.
 * An archive R2 holds is served; if a pull stored it but was stopped before
 * its commit, the commit is completed after the response (commitIfUncommitted).
 * Requests arriving meanwhile wait for the lease and are then served from
 * R2. HEAD of an archive not held answers 200 without Accept-Ranges (so a
 * client never takes an empty file for a complete one) and fetches nothing.
 */
export async function pullReleaseFile(request: IRequest, env: Env, ctx?: ExecutionContext): Promise<Response> {
  const served = await releaseFile(request, env, ctx);
  if (served.status !== 404 && served.status !== 200 && served.status !== 206) return served;
  const address = providerAddress(
    pathSegment(request.params.hostname, 'hostname'),
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.type, 'type'),
  );
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const filename = pathSegment(request.params.file, 'file');
  if (servedReleaseFileKind(address.type, version, filename) !== 'archive') return served;
  if (served.status !== 404) {
    // Stored: served as is; a pulled archive whose commit never happened (a Worker stopped after the put) is committed now.
    ctx?.waitUntil(commitIfUncommitted(env, address, version, filename));
    return served;
  }
  const pull = await pullContext(env, address);
  if (!pull?.allowance.allows(version)) return served;
  const label = `${formatAddress(address)} ${version}`;
  let manifest: PullManifest;
  try {
    manifest = await manifestFor(pull, version, Number.POSITIVE_INFINITY);
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    return upstreamFailure(error, `provider ${label}: ${filename} could not be pulled through: ${error.message}`);
  }
  const pkg = manifest.packages.find((p) => p.filename === filename);
  if (!pkg) return notFound(`${filename} is not in this mirror, and the pull-through policy does not allow its platform`);
  if (request.method === 'HEAD') {
    return new Response(null, { headers: { 'content-type': 'application/zip', 'cache-control': 'no-store' } });
  }
  const lease = await acquireLease(env.REGISTRY_R2, pullLeaseName(address, version), {
    owner: { host: 'worker', pid: 0, processStartedAt: ISOLATE_STARTED, purpose: `pull-through ${label} ${pkg.os}_${pkg.arch}` },
    ttlMs: 60_000,
    maxWaitMs: 5 * 60_000,
  });
  let handedOver = false;
  try {
    const key = releaseObjectKey(address, version, filename);
    const head = await env.REGISTRY_R2.head(key);
    if (head && head.customMetadata?.sha256 === pkg.shasum) {
      // Pulled by the request we waited for (or stored by one that died before committing).
      if (!(await isCommitted(env, address, version, filename))) await finish(pull, manifest, pkg, lease, true);
      return releaseFile(request, env, ctx);
    }
    let opened: { response: Response; url: string };
    try {
      opened = await pull.http.openArchive(pkg.downloadUrl, `archive of ${label} ${pkg.os}_${pkg.arch}`);
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      console.warn(`pull-through: ${label} ${pkg.os}_${pkg.arch}: ${error.message}`);
      return upstreamFailure(error, `provider ${label} ${pkg.os}_${pkg.arch} could not be pulled through: ${error.message}`);
    }
    const declared = Number(opened.response.headers.get('content-length') ?? NaN);
    // No Content-Length: streamed all the same, into a multipart upload (src/store/mirror/pull-parts.ts).
    const size = Number.isSafeInteger(declared) && declared > 0 ? declared : null;
    if (!opened.response.body || declared === 0) {
      await opened.response.body?.cancel();
      return errorResponse(502, `provider ${label} ${pkg.os}_${pkg.arch} could not be pulled through: ${opened.url} sent an empty body`);
    }
    if (size === null) {
      // No Content-Length: a chunked download cut short can look complete to a client behind a proxy, so the
      // client gets nothing unverified: the bytes go (checked) into a multipart upload, then R2 serves them.
      const copy = verifiedCopy(opened.response.body, {
        sha256Hex: pkg.shasum,
        size: null,
        idleMs: pull.http.limits.idleMs,
        what: `${opened.url} (${label} ${pkg.os}_${pkg.arch})`,
      });
      await copy.client.cancel();
      try {
        await Promise.all([copy.done, storePulledArchiveInParts(env.REGISTRY_R2, address, version, filename, copy.store, pkg.shasum)]);
        await finish(pull, manifest, pkg, lease, false);
      } catch (error) {
        const why = await noteNotStored(env, manifest, pkg, opened.url, error);
        if (!(error instanceof UpstreamError)) throw error;
        return upstreamFailure(error, `provider ${label} ${pkg.os}_${pkg.arch} could not be pulled through: ${why}`);
      }
      await notePull(
        env,
        address,
        version,
        'ok',
        `pulled ${pkg.os}_${pkg.arch} from ${opened.url} (no Content-Length: stored, then served) on first request, verified against SHA256SUMS signed by ${manifest.signer.key_id}`,
        { [filename]: pkg.shasum },
      );
      return releaseFile(request, env, ctx);
    }
    let stored: Promise<void> | undefined;
    const copy = verifiedCopy(opened.response.body, {
      sha256Hex: pkg.shasum,
      size,
      idleMs: pull.http.limits.idleMs,
      what: `${opened.url} (${label} ${pkg.os}_${pkg.arch})`,
      // Committed before the client's last block: a complete download means the mirror holds it (no waitUntil time limit).
      beforeClientEnd: async () => {
        await stored;
        await finish(pull, manifest, pkg, lease, false);
      },
    });
    stored = storePulledArchive(env.REGISTRY_R2, address, version, filename, copy.store, pkg.shasum);
    const background = (async () => {
      try {
        await Promise.all([copy.done, stored]);
        await notePull(
          env,
          address,
          version,
          'ok',
          `pulled ${pkg.os}_${pkg.arch} from ${opened.url} on first request, verified against SHA256SUMS signed by ${manifest.signer.key_id}`,
          { [filename]: pkg.shasum },
        );
      } catch (error) {
        await noteNotStored(env, manifest, pkg, opened.url, error);
      } finally {
        await lease.release();
      }
    })();
    stored.catch(() => {});
    ctx?.waitUntil(background);
    handedOver = true;
    return new Response(copy.client, {
      headers: {
        'content-type': 'application/zip',
        'content-length': String(size),
        'cache-control': releaseFileCacheControl(request, env),
        'x-mirror-pull': 'fetched from upstream and verified against its signed SHA256SUMS while streaming',
      },
    });
  } finally {
    if (!handedOver) await lease.release();
  }
}

const ISOLATE_STARTED = new Date().toISOString();

/** Whether the version's record lists `filename` (the commit point of a pulled archive). */
async function isCommitted(env: Env, address: ProviderAddress, version: string, filename: string): Promise<boolean> {
  const record = await readVersionRecord({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, address, version);
  return record?.packages.some((p) => p.filename === filename) ?? false;
}

/** A pull that stored nothing: logged and audited (refused: the upstream's fault; failed: ours). Returns the reason. */
async function noteNotStored(env: Env, manifest: PullManifest, pkg: PullManifest['packages'][number], from: string, error: unknown): Promise<string> {
  const why = (error as Error).message;
  console.warn(`pull-through: ${formatAddress(manifest.address)} ${manifest.version} ${pkg.os}_${pkg.arch}: not stored: ${why}`);
  await notePull(env, manifest.address, manifest.version, error instanceof UpstreamError ? 'refused' : 'failed', `${pkg.os}_${pkg.arch} from ${from}: ${why}`);
  return why;
}

/** Archives this isolate saw committed: the check below costs one R2 read per archive and isolate. */
const committed = new Set<string>();

/**
 * Completes a pull that stored its archive but never committed it (the
 * Worker was stopped between the verified put and the commit): when the
 * policy still allows the version, the stored manifest lists the archive,
 * the stored object carries its verified SHA-256 and the version record
 * lacks it, the commit runs now under the pull lease (finish). Runs after
 * the response (waitUntil); failures are logged, never thrown.
 */
async function commitIfUncommitted(env: Env, address: ProviderAddress, version: string, filename: string): Promise<void> {
  const key = releaseObjectKey(address, version, filename);
  if (committed.has(key)) return;
  try {
    const pull = await pullContext(env, address);
    if (!pull?.allowance.allows(version)) return;
    if (await isCommitted(env, address, version, filename)) {
      if (committed.size >= 4096) committed.clear();
      committed.add(key);
      return;
    }
    const manifest = await readManifest(env.REGISTRY_R2, address, version);
    const pkg = manifest?.packages.find((p) => p.filename === filename);
    const head = pkg ? await env.REGISTRY_R2.head(key) : null;
    if (!manifest || !pkg || head?.customMetadata?.sha256 !== pkg.shasum) return; // not a pulled archive (sync stores record and archive together)
    const label = `${formatAddress(address)} ${version}`;
    const lease = await acquireLease(env.REGISTRY_R2, pullLeaseName(address, version), {
      owner: { host: 'worker', pid: 0, processStartedAt: ISOLATE_STARTED, purpose: `pull-through repair ${label} ${pkg.os}_${pkg.arch}` },
      ttlMs: 60_000,
      maxWaitMs: 60_000,
    });
    try {
      if (await isCommitted(env, address, version, filename)) return;
      await finish(pull, manifest, pkg, lease, true);
      console.warn(`pull-through: ${label} ${pkg.os}_${pkg.arch}: committed an archive stored earlier by a pull that did not finish`);
      await notePull(
        env,
        address,
        version,
        'ok',
        `committed ${pkg.os}_${pkg.arch}, stored earlier (verified against SHA256SUMS signed by ${manifest.signer.key_id}) by a pull that did not finish`,
        { [filename]: pkg.shasum },
      );
    } finally {
      await lease.release();
    }
  } catch (error) {
    console.warn(`pull-through: ${formatAddress(address)} ${version} ${filename}: completing an uncommitted pull failed: ${(error as Error).message}`);
  }
}

/**
 * After the archive is stored: its h1 and the provider executable, from the
 * stored object; then the commit. An archive without the executable is
 * deleted again (Terraform would refuse it) and the error thrown.
 */
async function finish(pull: PullContext, manifest: PullManifest, pkg: PullManifest['packages'][number], lease: Lease, already: boolean): Promise<void> {
  const { address, version } = manifest;
  const bucket = pull.env.REGISTRY_R2;
  const key = releaseObjectKey(address, version, pkg.filename);
  const head = await bucket.head(key);
  if (!head) throw new Error(`${key} vanished before it was committed`);
  lease.check();
  const digest = await zipDigest(bucket, key, head.size);
  const check = checkProviderExecutable(
    digest.names.map((name) => ({ name })),
    { type: address.type, version, platform: { os: pkg.os } },
  );
  if (!check.ok) {
    await bucket.delete(key);
    throw new UpstreamError(`${executableProblem(check, `archive check failed: ${pkg.downloadUrl}`, 'mirror')}; deleted it again`);
  }
  await commitPulledPackage(
    pull.env.REGISTRY_KV,
    bucket,
    manifest,
    {
      os: pkg.os,
      arch: pkg.arch,
      filename: pkg.filename,
      shasum: pkg.shasum,
      h1: digest.h1,
      size: head.size,
    },
    {
      owner: {
        host: 'worker',
        pid: 0,
        processStartedAt: ISOLATE_STARTED,
        purpose: `pull-through commit ${formatAddress(address)} ${version}${already ? ' (stored earlier)' : ''}`,
      },
      maxWaitMs: 60_000,
    },
  );
}
