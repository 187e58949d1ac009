import type { IRequest } from 'itty-router';
import type { Env } from '../../env';
import { releaseFileCacheControl } from '../../config';
import { errorResponse, notFound } from '../../http/responses';
import { formatAddress } from '../../protocol/address';
import { servedReleaseFileKind } from '../../protocol/release-files';
import { pullLeaseName, releaseObjectKey } from '../../store/layout';
import { acquireLease, type Lease } from '../../store/lease';
import { checkPullRoom, storePulledArchive, type PullManifest } from '../../store/mirror/pull';
import { storeFromEnv } from '../../store/store';
import { storePulledArchiveInParts } from '../../store/mirror/pull-parts';
import { manifestFor, pullContext, type PullContext } from '../../mirror/pull-through';
import { UpstreamError } from '../../mirror/upstream-http';
import { StreamedArchive, storedArchive } from '../../mirror/pulled-archive';
import { notePull } from '../../mirror/changes';
import { releaseFile, releaseFileParams } from '../archives';
import { upstreamFailure } from './documents';
import { commitIfUncommitted, finish, isCommitted, ISOLATE_STARTED, noteNotStored } from './commit';

/**
 * GET|HEAD /v1/archives/… with pull-through: what R2 holds is served as
 * before (releaseFile). An archive not held, of a version and platform the
 * policy allows, is fetched by exactly one request at a time (the version's
 * pull lease, an R2 object created with If-None-Match: *): it streams the
 * upstream's bytes to the client and into R2 at once, verified by the one
 * archive verification of `mirror sync` and `import` too
 * (src/mirror/verify-archive.ts over src/mirror/pulled-archive.ts): the bytes
 * against the signed SHA256SUMS line as they stream (src/mirror/verified-copy.ts:
 * a mismatch errors both streams, so R2 stores nothing and the client's
 * download is aborted), then the stored zip's h1 and provider executable;
 * then it commits the version record (storeMirroredVersion under the provider
 * lease) — all before the client's
 * last block, so the work is part of the request, not a waitUntil with its
 * time limit — and releases the lease.
 * An upstream that sends no Content-Length is read the same way into an R2
 * multipart upload (src/store/mirror/pull-parts.ts) and the client is served
 * from R2 once it verified and committed (a 502 naming the failure otherwise):
 * a chunked download cut short may look complete behind a proxy.
 * An archive R2 holds is served; if a pull stored it but was stopped before
 * its commit, the commit is completed after the response (commitIfUncommitted).
 * A pull whose version or platform the versions document has no room for
 * (KV's 25 MiB values, checkPullRoom) answers 400 before anything is written.
 * Requests arriving meanwhile wait for the lease and are then served from
 * R2. HEAD of an archive not held answers 200 without Accept-Ranges (so a
 * client never takes an empty file for a complete one) and fetches nothing.
 */
export async function pullReleaseFile(request: IRequest, env: Env, ctx?: ExecutionContext): Promise<Response> {
  const served = await releaseFile(request, env, ctx);
  if (served.status !== 404 && served.status !== 200 && served.status !== 206) return served;
  const { address, version, filename } = releaseFileParams(request);
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
  // A pull whose commit would take the versions document past KV's 25 MiB is refused (400, naming the fix) before
  // the pull lease is taken or the upstream asked: nothing written. The commit checks again under the provider lease.
  await checkPullRoom(storeFromEnv(env), manifest, pkg);
  if (request.method === 'HEAD') {
    return new Response(null, { headers: { 'content-type': 'application/zip', 'cache-control': 'no-store' } });
  }
  return pullUnderLease({ request, env, ctx, pull, manifest, pkg, label });
}

/** One archive to pull: the request, the version's verified manifest and the archive's entry in it. */
interface Pull {
  request: IRequest;
  env: Env;
  ctx: ExecutionContext | undefined;
  pull: PullContext;
  manifest: PullManifest;
  pkg: PulledPackage;
  /** "HOST/NS/TYPE VERSION" for messages. */
  label: string;
}

type PulledPackage = PullManifest['packages'][number];

/**
 * Pulls `pkg` under the version's pull lease (waiting for a pull already
 * running, then serving what it stored): opens the upstream archive and
 * hands it to pullStreaming (a Content-Length) or pullUnsized (none). The
 * lease is released here unless pullStreaming handed it to its background
 * work. Answers 502/504 for an upstream that fails or sends an empty body.
 */
async function pullUnderLease(p: Pull): Promise<Response> {
  const { request, env, ctx, manifest, pkg, label } = p;
  const { address, version } = manifest;
  const lease = await acquireLease(env.REGISTRY_R2, pullLeaseName(address, version), {
    owner: { host: 'worker', pid: 0, processStartedAt: ISOLATE_STARTED, purpose: `pull-through ${label} ${pkg.os}_${pkg.arch}` },
    ttlMs: 60_000,
    maxWaitMs: 5 * 60_000,
  });
  let handedOver = false;
  try {
    const key = releaseObjectKey(address, version, pkg.filename);
    const head = await env.REGISTRY_R2.head(key);
    if (head && head.customMetadata?.sha256 === pkg.shasum) {
      // Pulled by the request we waited for (or stored by one that died before committing).
      if (!(await isCommitted(env, address, version, pkg.filename))) {
        await finish(p.pull, manifest, pkg, storedArchive(env.REGISTRY_R2, key), lease, { size: null, what: pkg.downloadUrl, already: true });
      }
      return releaseFile(request, env, ctx);
    }
    let opened: { response: Response; url: string };
    try {
      opened = await p.pull.http.openArchive(pkg.downloadUrl, `archive of ${label} ${pkg.os}_${pkg.arch}`);
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
    const upstream = { body: opened.response.body, url: opened.url, key };
    if (size === null) return await pullUnsized(p, upstream, lease);
    handedOver = true;
    return pullStreaming(p, { ...upstream, size }, lease);
  } finally {
    if (!handedOver) await lease.release();
  }
}

/** The upstream's open archive body: where it came from (after redirects) and the R2 key it goes to. */
interface UpstreamBody {
  body: ReadableStream<Uint8Array>;
  url: string;
  key: string;
}

/**
 * An upstream that sent no Content-Length: a chunked download cut short can
 * look complete to a client behind a proxy, so the client gets nothing
 * unverified: the bytes go (checked) into a multipart upload, are verified
 * and committed (finish), then R2 serves them. Answers 502 naming the failed
 * check when the upstream's archive is refused; throws our own failures.
 */
async function pullUnsized(p: Pull, upstream: UpstreamBody, lease: Lease): Promise<Response> {
  const { request, env, ctx, manifest, pkg, label } = p;
  const { address, version } = manifest;
  const what = `${upstream.url} (${label} ${pkg.os}_${pkg.arch})`;
  const archive = new StreamedArchive(env.REGISTRY_R2, upstream.key, upstream.body, {
    size: null,
    idleMs: p.pull.http.limits.idleMs,
    what,
    store: (body) => storePulledArchiveInParts(env.REGISTRY_R2, address, version, pkg.filename, body, pkg.shasum),
  });
  const verified = finish(p.pull, manifest, pkg, archive, lease, { size: null, what, already: false });
  await archive.client.cancel();
  try {
    await Promise.all([archive.done, verified]);
  } catch (error) {
    const why = await noteNotStored(env, manifest, pkg, upstream.url, error);
    if (!(error instanceof UpstreamError)) throw error;
    return upstreamFailure(error, `provider ${label} ${pkg.os}_${pkg.arch} could not be pulled through: ${why}`);
  }
  await notePull(
    env,
    address,
    version,
    'ok',
    `pulled ${pkg.os}_${pkg.arch} from ${upstream.url} (no Content-Length: stored, then served) on first request, verified against SHA256SUMS signed by ${manifest.signer.key_id}`,
    { [pkg.filename]: pkg.shasum },
  );
  return releaseFile(request, env, ctx);
}

/**
 * An upstream that sent a Content-Length: its bytes stream to the client and
 * into R2 at once (StreamedArchive), verified and committed (finish) before
 * the client's last block, so the work is part of the request, not a
 * waitUntil with its time limit. The lease is released by the background
 * work once both destinations are done (audited either way).
 */
function pullStreaming(p: Pull, upstream: UpstreamBody & { size: number }, lease: Lease): Response {
  const { request, env, ctx, manifest, pkg, label } = p;
  const { address, version } = manifest;
  const what = `${upstream.url} (${label} ${pkg.os}_${pkg.arch})`;
  let committed: Promise<void> | undefined;
  const archive = new StreamedArchive(env.REGISTRY_R2, upstream.key, upstream.body, {
    size: upstream.size,
    idleMs: p.pull.http.limits.idleMs,
    what,
    store: (body) => storePulledArchive(env.REGISTRY_R2, address, version, pkg.filename, body, pkg.shasum),
    // Committed before the client's last block: a complete download means the mirror holds it (no waitUntil time limit).
    beforeClientEnd: () => committed!,
  });
  committed = finish(p.pull, manifest, pkg, archive, lease, { size: upstream.size, what, already: false });
  committed.catch(() => {}); // reported through `done`: the copy fails with it
  const background = (async () => {
    try {
      await archive.done;
      await notePull(
        env,
        address,
        version,
        'ok',
        `pulled ${pkg.os}_${pkg.arch} from ${upstream.url} on first request, verified against SHA256SUMS signed by ${manifest.signer.key_id}`,
        { [pkg.filename]: pkg.shasum },
      );
    } catch (error) {
      await noteNotStored(env, manifest, pkg, upstream.url, error);
    } finally {
      await lease.release();
    }
  })();
  ctx?.waitUntil(background);
  return new Response(archive.client, {
    headers: {
      'content-type': 'application/zip',
      'content-length': String(upstream.size),
      'cache-control': releaseFileCacheControl(request, env),
      'x-mirror-pull': 'fetched from upstream and verified against its signed SHA256SUMS while streaming',
    },
  });
}
