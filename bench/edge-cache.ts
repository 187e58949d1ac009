/**
 * The location's edge cache (Cache API) in `npm run bench`: what each
 * request for a release file or document reads from R2 and KV — the first
 * in a location, again in the same isolate, and in a fresh isolate of the
 * same location (a new workerd on the same state and cache directory) — and
 * how fast a large archive streams from R2 versus from the cache, and how
 * much workerd's RSS grows while it streams from R2 (a fresh workerd).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { rssBytes } from './proc';
import { opsOf, readsOf as readsIn, startRuntime, type Runtime } from './runtime';
import { HOSTNAME, archivePath, seedLargeArchive, seedSmall } from './seed';
import { releaseFilePath } from '../src/store/layout';
import { archiveFilename, shasumsFilename, shasumsSignatureFilename } from '../src/protocol/release-files';
import { freePort } from '../test/e2e/server';

/** KV and R2 reads of a request. */
export type Reads = ReturnType<typeof readsIn>;

export interface EdgeCacheFigures {
  reads: { name: string; first: Reads; sameIsolate: Reads; freshIsolate: Reads }[];
  archive: { mb: number; fromR2MbPerSecond: number; fromCacheMbPerSecond: number; fromCacheFreshIsolateMbPerSecond: number; rssGrowthMb: number };
}

export async function benchEdgeCache(countingBundle: string, work: string, quick: boolean, log: (m: string) => void): Promise<EdgeCacheFigures> {
  const dir = join(work, 'edge-cache-state');
  const provider = { hostname: HOSTNAME, namespace: 'bench', type: 'edge' };
  const big = { hostname: HOSTNAME, namespace: 'bench', type: 'edgebig' };
  const bytes = (quick ? 50 : 200) * 1024 * 1024;
  const version = '1.0.0';
  const file = (name: string) => releaseFilePath(provider, version, name);
  const routes = [
    { name: 'archive', path: file(archiveFilename('edge', version, { os: 'linux', arch: 'amd64' })), r2: true },
    { name: 'SHA256SUMS', path: file(shasumsFilename('edge', version)), r2: true },
    { name: 'SHA256SUMS.sig', path: file(shasumsSignatureFilename('edge', version)), r2: true },
    { name: 'download doc', path: `/v1/providers/bench/edge/${version}/download/linux/amd64`, r2: false },
    { name: 'mirror version', path: `/v1/mirror/${HOSTNAME}/bench/edge/${version}.json`, r2: false },
    { name: 'versions (list)', path: '/v1/providers/bench/edge/versions', r2: false },
    { name: 'mirror index (list)', path: `/v1/mirror/${HOSTNAME}/bench/edge/index.json`, r2: false },
  ];
  const bigPath = archivePath(big, version);
  // One port for every runtime: the cache's keys are on the request's origin, as on a custom domain.
  const port = await freePort();
  const start = () => startRuntime({ bundlePath: countingBundle }, dir, { persistCache: true, port });

  const first: Reads[] = [];
  const sameIsolate: Reads[] = [];
  const freshIsolate: Reads[] = [];
  let archive: EdgeCacheFigures['archive'];

  let runtime = await start();
  try {
    await seedSmall(runtime, provider, version);
    await seedLargeArchive(runtime, big, version, bytes);
    for (const route of routes) first.push(await readsOf(runtime, route.path));
    for (const route of routes.filter((r) => r.r2)) await untilCached(runtime, route.path);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the documents' puts (small, already under way)
    for (const route of routes) sameIsolate.push(await readsOf(runtime, route.path));
  } finally {
    await runtime.dispose();
  }

  runtime = await start();
  try {
    for (const route of routes) freshIsolate.push(await readsOf(runtime, route.path));
    log(`edge cache: ${bytes / 1024 / 1024} MB archive from R2 (first request in the location)`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const baseline = rssBytes(runtime.pid);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(runtime.pid))), 20);
    const fromR2 = await curl(runtime, bigPath, bytes).finally(() => clearInterval(sampler));
    peak = Math.max(peak, rssBytes(runtime.pid));
    await untilCached(runtime, bigPath, 120_000);
    log('edge cache: the same archive from the cache');
    const fromCache = await curl(runtime, bigPath, bytes);
    await runtime.dispose();
    runtime = await start();
    const fromCacheFresh = await curl(runtime, bigPath, bytes);
    const mbps = (seconds: number) => bytes / 1024 / 1024 / seconds;
    archive = {
      mb: bytes / 1024 / 1024,
      fromR2MbPerSecond: mbps(fromR2),
      fromCacheMbPerSecond: mbps(fromCache),
      fromCacheFreshIsolateMbPerSecond: mbps(fromCacheFresh),
      rssGrowthMb: (peak - baseline) / 1024 / 1024,
    };
    log(
      `edge cache: archive from R2 ${archive.fromR2MbPerSecond.toFixed(0)} MB/s, from the cache ${archive.fromCacheMbPerSecond.toFixed(0)} MB/s (fresh isolate ${archive.fromCacheFreshIsolateMbPerSecond.toFixed(0)} MB/s); workerd RSS +${archive.rssGrowthMb.toFixed(1)} MB from R2`,
    );
  } finally {
    await runtime.dispose();
  }
  return {
    reads: routes.map((route, i) => ({ name: route.name, first: first[i]!, sameIsolate: sameIsolate[i]!, freshIsolate: freshIsolate[i]! })),
    archive,
  };
}

async function counters(runtime: Runtime): Promise<Reads> {
  return readsIn(await opsOf(runtime));
}

/** KV and R2 reads of one GET (body read to the end). */
async function readsOf(runtime: Runtime, path: string): Promise<Reads> {
  await counters(runtime);
  const response = await fetch(`${runtime.origin}${path}`);
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`edge cache bench: GET ${path} answered ${response.status}`);
  return counters(runtime);
}

/** Waits until a HEAD of `path` reads no R2 (the location's cache holds it); HEAD itself never fills the cache. */
async function untilCached(runtime: Runtime, path: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await counters(runtime);
    await (await fetch(`${runtime.origin}${path}`, { method: 'HEAD' })).arrayBuffer();
    if ((await counters(runtime)).r2 === 0) return;
    if (Date.now() > deadline) throw new Error(`edge cache bench: ${path} was not cached within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Seconds curl takes to download `path` (checks status and size). */
function curl(runtime: Runtime, path: string, size: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('curl', ['-s', '-S', '-o', '/dev/null', '-w', '%{http_code} %{size_download} %{time_total}', `${runtime.origin}${path}`]);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const [status, downloaded, seconds] = out.split(' ').map(Number);
      if (code !== 0 || status !== 200 || downloaded !== size)
        reject(new Error(`edge cache bench: curl ${path}: exit ${code}, HTTP ${status}, ${downloaded} bytes`));
      else resolve(seconds!);
    });
  });
}
