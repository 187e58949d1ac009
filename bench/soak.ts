/**
 * `npm run bench -- --soak [MINUTES]` (default 10): memory under sustained
 * load. 50 wrk connections for MINUTES against the built Worker in workerd
 * (the bench's counting wrapper around the same Worker), each request a
 * random pick among every document and some release files of a provider
 * whose documents add up to well over the isolate cache's 32 MiB, so the
 * cache is kept full and evicting all along. Every few seconds it samples
 * workerd's RSS and the cache's own figures (/__bench/cache), then prints the
 * RSS curve, whether it plateaus after the warm-up, and whether the cache's
 * byte bound held at every sample, and the Worker's answers per route and
 * status with the requests it never answered (/__bench/statuses). Reported,
 * never a failure. Miniflare's own isolates collect their garbage every
 * HELPER_COLLECTION_SECONDS (SoakOptions.rawHelpers says why); after the load
 * every isolate does, and the RSS left is reported.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeRelease } from '../test/fixtures/release';
import { publishVersion, rebuildProviderIndex } from '../src/store/providers/write';
import { downloadDocumentKey, releaseFilePath } from '../src/store/layout';
import type { ProviderAddress } from '../src/protocol/address';
import { createServer } from 'node:net';
import { build } from './build';
import { connectHeaps, type HeapFigures } from './inspector';
import { cpuMicros, rssBytes, rssParts } from './proc';
import { startRuntime, type Runtime } from './runtime';
import { HOSTNAME, PLATFORMS, stores } from './seed';
import { wrk, type LoadResult } from './wrk';

const CONNECTIONS = 50;
const VERSIONS = 300;
const ARCHIVE_BYTES = 256 * 1024;
// A real RSA-4096 public key in ASCII armor is ~3 KB; every download document carries one.
const ARMOR = `-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n${'A'.repeat(3000).replace(/(.{64})/g, '$1\n')}\n-----END PGP PUBLIC KEY BLOCK-----\n`;

export interface SoakSample {
  seconds: number;
  rssMb: number;
  /** Of rssMb: anonymous memory (malloc, V8 heaps); the rest is file-backed (workerd's binary). */
  anonMb: number;
  cpuSeconds: number;
  /** The cache's figures; null when /__bench/cache did not answer (3 tries) behind the load's 50 connections. */
  cache: { entries: number; bytes: number; maxBytes: number; evictions: number } | null;
  /** V8 heaps in workerd (null when the inspector could not be read). */
  heap: HeapFigures | null;
}

export interface SoakResult {
  minutes: number;
  connections: number;
  paths: number;
  storedDocumentMb: number;
  load: LoadResult;
  samples: SoakSample[];
  rss: {
    startMb: number; afterWarmupMb: number; endMb: number; peakMb: number;
    /** Least-squares slope after the warm-up (the first fifth of the run). */
    slopeMbPerMinute: number;
    /** Mean RSS of the last third minus that of the middle third. */
    lastThirdMinusMiddleThirdMb: number;
    plateaus: boolean;
  };
  cache: { maxBytesSeen: number; bound: number; heldAtEverySample: boolean; evictions: number; samplesRead: number };
  /** The Worker isolate's V8 heap size (null without inspector figures): its slope after the warm-up, like RSS's. */
  workerHeap: { startMb: number; endMb: number; peakMb: number; slopeMbPerMinute: number } | null;
  /** How often Miniflare's own isolates were made to collect their garbage during the load (null: never, see SoakOptions.rawHelpers). */
  helperCollections?: { everySeconds: number; count: number } | null;
  /** After the load, once every isolate has run a full garbage collection (null: no inspector). */
  afterCollection?: { rssMb: number; anonMb: number; heap: HeapFigures } | null;
  /** The Worker's own count of answers per route and status, and the requests it never answered (null: not read). */
  routes?: RouteFigures | null;
}

export interface RouteFigures {
  statuses: Record<string, number>;
  stuck: { route: string; path: string; gzip: boolean; ageSeconds: number }[];
}

/** /__bench/statuses: the Worker's answers per route and status, and requests never answered. */
async function routeFigures(origin: string): Promise<RouteFigures | null> {
  try {
    const response = await fetch(`${origin}/__bench/statuses`, { signal: AbortSignal.timeout(10_000) });
    return (await response.json()) as RouteFigures;
  } catch {
    return null;
  }
}

const log = (message: string) => process.stderr.write(`bench soak: ${message}\n`);

/**
 * Runs the soak for `minutes` and prints its report (or, with `json`, one JSON object).
 * `cachedOnly`: load only the documents of the first 40 versions, which fit in the
 * isolate cache — no KV read after the warm-up — to tell growth on the KV path apart.
 */
export interface SoakOptions {
  /** Load only documents that fit in the isolate cache (see soak). */
  cachedOnly?: boolean;
  /** Writes heap snapshots of the Worker's isolate and the largest other one here after the warm-up and at the end. */
  snapshotDir?: string;
  /**
   * Leave Miniflare's own isolates (its entry worker, the KV, R2 and Cache API simulators)
   * to V8 alone. By default the soak has them collect their garbage every
   * HELPER_COLLECTION_SECONDS: each holds native memory V8 does not see (request and
   * response state, tens of KB per request, behind a few hundred bytes of JavaScript), so
   * their small heaps are seldom collected and that memory piles up in workerd, a growth no
   * deployed Worker has (there are no such isolates on Cloudflare). The Worker's own isolate
   * is never collected by the soak.
   */
  rawHelpers?: boolean;
}

/** How often Miniflare's own isolates collect their garbage during the soak (unless rawHelpers). */
const HELPER_COLLECTION_SECONDS = 10;

export async function soak(minutes: number, json: boolean, options: SoakOptions = {}): Promise<SoakResult> {
  const { cachedOnly = false } = options;
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-soak-'));
  try {
    log('building the Worker with the bench wrapper (wrangler deploy --dry-run)');
    const bundle = await build(work, 'bench/counting-worker.ts');
    const inspectorPort = await freePort();
    const runtime = await startRuntime({ bundlePath: bundle }, join(work, 'state'), { inspectorPort });
    let heaps: Awaited<ReturnType<typeof connectHeaps>> | null = null;
    try {
      const address = { hostname: HOSTNAME, namespace: 'soak', type: 'churn' };
      log(`seeding ${VERSIONS} versions × ${PLATFORMS.length} platforms (documents) and ${PLATFORMS.length} × ${ARCHIVE_BYTES / 1024} KiB archives`);
      const seeded = await seed(runtime, address);
      const paths = cachedOnly ? seeded.paths.filter((p) => !p.startsWith('/v1/archives/')).slice(0, 2 + 40 * 13) : seeded.paths;
      const storedBytes = cachedOnly ? (seeded.storedBytes * 40) / VERSIONS : seeded.storedBytes;
      if (cachedOnly) log('--cached: only documents that fit in the isolate cache');
      const script = join(work, 'paths.lua');
      await writeFile(script, luaRotation(paths));
      for (const path of [paths[0]!, paths[paths.length - 1]!]) {
        const check = await fetch(`${runtime.origin}${path}`);
        await check.arrayBuffer();
        if (check.status !== 200) throw new Error(`GET ${path} answered ${check.status}`);
      }
      log(`${paths.length} paths, ${(storedBytes / 1024 / 1024).toFixed(1)} MB of stored documents; ${CONNECTIONS} connections for ${minutes} min`);

      try {
        heaps = await connectHeaps(inspectorPort);
      } catch (error) {
        log(`no heap figures: ${(error as Error).message}`);
      }
      const interval = minutes >= 5 ? 5 : 2;
      const samples: SoakSample[] = [];
      let snapshotsTaken = 0;
      const started = Date.now();
      const sample = async () => {
        const seconds = (Date.now() - started) / 1000;
        const rssMb = rssBytes(runtime.pid) / 1024 / 1024;
        const anonMb = rssParts(runtime.pid).anon / 1024 / 1024;
        const cpuSeconds = cpuMicros(runtime.pid) / 1e6;
        const heap = heaps ? await heaps.sample().catch(() => null) : null;
        const cache = await cacheFigures(runtime.origin);
        samples.push({ seconds, rssMb, anonMb, cpuSeconds, cache, heap });
        if (options.snapshotDir && heaps && heap && snapshotsTaken === 0 && seconds >= (minutes * 60) / 5) {
          snapshotsTaken++;
          await snapshots(heaps, heap, options.snapshotDir, 'warm');
        }
        if (samples.length % Math.max(1, Math.round(60 / interval)) === 1) {
          log(`${seconds.toFixed(0)} s: RSS ${rssMb.toFixed(1)} MB, Worker heap ${heap ? heap.workerTotalMb.toFixed(1) : '?'} MB, cache ${cache ? `${(cache.bytes / 1024 / 1024).toFixed(1)} MB in ${cache.entries} entries, ${cache.evictions} evictions` : 'not read'}`);
        }
      };
      await sample();
      let sampling = Promise.resolve();
      let collecting = Promise.resolve();
      let collections = 0;
      // Miniflare's own isolates (see SoakOptions.rawHelpers); never the Worker's, whose heap is left to V8.
      let collectionRunning = false;
      const collector = heaps && !options.rawHelpers
        ? setInterval(() => {
          if (collectionRunning) return;
          collectionRunning = true;
          collecting = collecting
            .then(async () => { await heaps!.collectGarbage('others'); collections++; })
            .catch((error: unknown) => { log(`collection failed: ${String(error)}`); })
            .finally(() => { collectionRunning = false; });
        }, HELPER_COLLECTION_SECONDS * 1000)
        : undefined;
      // A tick that comes while the previous sample is still being read (a busy workerd answers slowly) is skipped,
      // never queued: queued samples would all be read at once after the load, as rows that never happened.
      let sampleRunning = false;
      const timer = setInterval(() => {
        if (sampleRunning) return;
        sampleRunning = true;
        sampling = sampling.then(sample).catch((error: unknown) => { log(`sample failed: ${String(error)}`); }).finally(() => { sampleRunning = false; });
      }, interval * 1000);
      let load: LoadResult;
      try {
        load = await wrk(`${runtime.origin}/`, { connections: CONNECTIONS, seconds: Math.round(minutes * 60), script });
      } finally {
        clearInterval(timer);
        clearInterval(collector);
        await sampling;
        await collecting;
      }
      await sample();
      const last = samples[samples.length - 1]!.heap;
      if (options.snapshotDir && heaps && last) await snapshots(heaps, last, options.snapshotDir, 'end');
      // What is left once every isolate has collected its garbage: live memory, not garbage V8 has yet to collect.
      let collected: SoakResult['afterCollection'] = null;
      if (heaps) {
        try {
          await heaps.collectGarbage();
          collected = { rssMb: rssBytes(runtime.pid) / 1024 / 1024, anonMb: rssParts(runtime.pid).anon / 1024 / 1024, heap: await heaps.sample() };
          log(`after a full collection in every isolate: RSS ${collected.rssMb.toFixed(1)} MB`);
        } catch (error) {
          log(`full collection failed: ${String(error)}`);
        }
      }
      // After a pause, so requests wrk gave up on have had time to finish (or be found hung).
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      const routes = await routeFigures(runtime.origin);
      const result = analyse(minutes, paths.length, storedBytes, load, samples);
      result.routes = routes;
      result.afterCollection = collected;
      result.helperCollections = heaps && !options.rawHelpers ? { everySeconds: HELPER_COLLECTION_SECONDS, count: collections } : null;
      process.stdout.write(json ? `${JSON.stringify(result)}\n` : report(result));
      return result;
    } finally {
      heaps?.close();
      await runtime.dispose();
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Heap snapshots of the Worker's isolate and the largest other one, named STAGE-TARGET.heapsnapshot. */
async function snapshots(heaps: Awaited<ReturnType<typeof connectHeaps>>, heap: HeapFigures, dir: string, stage: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const others = Object.entries(heap.totalMbByTarget).filter(([id]) => id !== 'core:user:').sort((a, b) => b[1] - a[1]);
  for (const id of ['core:user:', ...others.slice(0, 1).map(([id]) => id)]) {
    const file = join(dir, `${stage}-${id.replace(/[^\w.-]+/g, '_')}.heapsnapshot`);
    log(`heap snapshot of ${id} → ${file}`);
    await heaps.snapshot(id, file).catch((error: unknown) => log(`snapshot of ${id} failed: ${String(error)}`));
  }
}

/**
 * Publishes VERSIONS versions through the store's write path: every
 * version's download and mirror documents (no files), one version with its
 * release files, then the lists. Returns every path the load picks from.
 */
async function seed(runtime: Runtime, address: ProviderAddress): Promise<{ paths: string[]; storedBytes: number }> {
  const { kv, r2 } = await stores(runtime);
  const versions = Array.from({ length: VERSIONS }, (_, i) => `${Math.floor(i / 100) + 1}.${i % 100}.0`);
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < versions.length) {
      const version = versions[next++]!;
      const full = version === versions[0];
      const release = fakeRelease(address, version, PLATFORMS, { archiveSize: full ? ARCHIVE_BYTES : 64 });
      release.record.signingKey = { key_id: '0123456789ABCDEF', ascii_armor: ARMOR };
      await publishVersion(kv, r2, release.record, full ? release.files : [], () => {}, { rebuildIndex: false });
    }
  }));
  await rebuildProviderIndex(kv, address, () => {}, r2);

  const paths: string[] = [
    `/v1/providers/${address.namespace}/${address.type}/versions`,
    `/v1/mirror/${address.hostname}/${address.namespace}/${address.type}/index.json`,
  ];
  for (const version of versions) {
    paths.push(`/v1/mirror/${address.hostname}/${address.namespace}/${address.type}/${version}.json`);
    for (const name of PLATFORMS) {
      const [os, arch] = name.split('_') as [string, string];
      paths.push(`/v1/providers/${address.namespace}/${address.type}/${version}/download/${os}/${arch}`);
    }
  }
  const sample = await kv.get(downloadDocumentKey(address, versions[1]!, { os: 'linux', arch: 'amd64' }), 'text');
  const storedBytes = (sample?.length ?? 0) * VERSIONS * PLATFORMS.length;
  const first = fakeRelease(address, versions[0]!, PLATFORMS, { archiveSize: ARCHIVE_BYTES });
  for (const pkg of first.record.packages) paths.push(releaseFilePath(address, versions[0]!, pkg.filename));
  return { paths, storedBytes };
}

/** A wrk script that sends each request to a random one of `paths`. */
function luaRotation(paths: readonly string[]): string {
  return [
    'local paths = {',
    ...paths.map((p) => `  ${JSON.stringify(p)},`),
    '}',
    'math.randomseed(os.time())',
    'request = function()',
    '  return wrk.format("GET", paths[math.random(#paths)])',
    'end',
    'response = function(status, headers, body)',
    '  if status ~= 200 then io.write("non-200: " .. status .. " " .. string.sub(body or "", 1, 160) .. "\\n") end',
    'end',
    '',
  ].join('\n');
}

function analyse(minutes: number, pathCount: number, storedBytes: number, load: LoadResult, samples: SoakSample[]): SoakResult {
  const total = samples[samples.length - 1]!.seconds;
  const afterWarmup = samples.filter((s) => s.seconds >= total / 5);
  const slope = leastSquaresSlope(afterWarmup.map((s) => [s.seconds / 60, s.rssMb]));
  const mean = (list: SoakSample[]) => list.reduce((sum, s) => sum + s.rssMb, 0) / Math.max(1, list.length);
  const middle = samples.filter((s) => s.seconds >= total / 3 && s.seconds < (2 * total) / 3);
  const last = samples.filter((s) => s.seconds >= (2 * total) / 3);
  const drift = mean(last) - mean(middle);
  const windowMinutes = (total * 4) / 5 / 60;
  // Plateau: what is left of the growth after the warm-up would add less than 5% (and under 16 MB) over the window.
  const allowed = Math.min(16, 0.05 * mean(afterWarmup));
  const plateaus = slope * windowMinutes <= allowed && drift <= allowed;
  const withHeap = samples.filter((s) => s.heap !== null);
  const workerHeap = withHeap.length < 2 ? null : {
    startMb: withHeap[0]!.heap!.workerTotalMb,
    endMb: withHeap[withHeap.length - 1]!.heap!.workerTotalMb,
    peakMb: Math.max(...withHeap.map((s) => s.heap!.workerTotalMb)),
    slopeMbPerMinute: leastSquaresSlope(withHeap.filter((s) => s.seconds >= total / 5).map((s) => [s.seconds / 60, s.heap!.workerTotalMb])),
  };
  const caches = samples.flatMap((s) => (s.cache ? [s.cache] : []));
  const bound = caches[0]?.maxBytes ?? 0;
  const maxBytesSeen = Math.max(0, ...caches.map((c) => c.bytes));
  return {
    minutes, connections: CONNECTIONS, paths: pathCount, storedDocumentMb: storedBytes / 1024 / 1024, load, samples,
    rss: {
      startMb: samples[0]!.rssMb, afterWarmupMb: afterWarmup[0]?.rssMb ?? samples[0]!.rssMb, endMb: samples[samples.length - 1]!.rssMb,
      peakMb: Math.max(...samples.map((s) => s.rssMb)), slopeMbPerMinute: slope, lastThirdMinusMiddleThirdMb: drift, plateaus,
    },
    cache: { maxBytesSeen, bound, heldAtEverySample: caches.length > 0 && maxBytesSeen <= bound, evictions: caches[caches.length - 1]?.evictions ?? 0, samplesRead: caches.length },
    workerHeap,
  };
}

/** /__bench/cache, tried 3 times (the load keeps workerd busy); null when it never answered. */
async function cacheFigures(origin: string): Promise<NonNullable<SoakSample['cache']>| null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const response = await fetch(`${origin}/__bench/cache`, { signal: AbortSignal.timeout(10_000) });
      return (await response.json()) as NonNullable<SoakSample['cache']>;
    } catch {
      // try again
    }
  }
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function leastSquaresSlope(points: readonly (readonly [number, number])[]): number {
  if (points.length < 2) return 0;
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

function report(result: SoakResult): string {
  const lines: string[] = [];
  const mb = (n: number) => n.toFixed(1);
  lines.push(`edge-registry soak — wrk, ${result.connections} connections, ${result.minutes} min, random picks among ${result.paths} paths (${mb(result.storedDocumentMb)} MB of stored documents)`);
  lines.push(`load: ${result.load.requests} requests, ${result.load.rps.toFixed(0)} req/s, p50 ${result.load.p50Ms} ms, p99 ${result.load.p99Ms} ms, ${result.load.non2xx} non-2xx, ${result.load.errors} socket errors`);
  for (const line of (result.load.non200 ?? []).slice(0, 5)) lines.push(`  non-200 response: ${line}`);
  if (result.routes) {
    lines.push(`  answers by route and status (the Worker's count): ${Object.entries(result.routes.statuses).map(([k, n]) => `${k}: ${n}`).join(', ')}`);
    const stuck = result.routes.stuck;
    lines.push(`  requests the Worker never answered (hung, or cancelled by workerd before an answer): ${stuck.length}${stuck.length ? ` — ${stuck.slice(0, 5).map((s) => `${s.path}${s.gzip ? ' (gzip)' : ''} ${s.ageSeconds} s`).join('; ')}` : ''}`);
  }
  const collected = result.helperCollections;
  lines.push(collected
    ? `  Miniflare's own isolates (entry worker, KV/R2/cache simulators) collected their garbage every ${collected.everySeconds} s (${collected.count} times), the Worker's isolate never (--raw-helpers: leave them alone)`
    : '  Miniflare\'s own isolates left to V8 (--raw-helpers, or no inspector): RSS includes the native memory their uncollected garbage holds');
  lines.push('');
  lines.push('   time   RSS MB  anon MB  Worker heap used/total MB  other isolates MB  cache MB  entries  evictions  CPU s');
  const peak = result.rss.peakMb;
  // At most ~30 rows: every k-th sample, always the last.
  const step = Math.max(1, Math.ceil(result.samples.length / 30));
  result.samples.forEach((s, i) => {
    if (i % step !== 0 && i !== result.samples.length - 1) return;
    const bar = '#'.repeat(Math.round((s.rssMb / peak) * 40));
    const heap = s.heap ? `${mb(s.heap.workerUsedMb)} / ${mb(s.heap.workerTotalMb)}` : '—';
    lines.push(`${`${s.seconds.toFixed(0)} s`.padStart(7)}  ${mb(s.rssMb).padStart(7)}  ${mb(s.anonMb).padStart(7)}  ${heap.padStart(25)}  ${(s.heap ? mb(s.heap.othersTotalMb) : '—').padStart(17)}  ${(s.cache ? mb(s.cache.bytes / 1024 / 1024) : '—').padStart(8)}  ${String(s.cache?.entries ?? '—').padStart(7)}  ${String(s.cache?.evictions ?? '—').padStart(9)}  ${s.cpuSeconds.toFixed(0).padStart(5)}  ${bar}`);
  });
  lines.push('');
  const r = result.rss;
  lines.push(`RSS: ${mb(r.startMb)} MB at start, ${mb(r.afterWarmupMb)} MB after the warm-up (first fifth), ${mb(r.endMb)} MB at the end, peak ${mb(r.peakMb)} MB`);
  lines.push(`     slope after the warm-up ${r.slopeMbPerMinute.toFixed(2)} MB/min; last third − middle third ${r.lastThirdMinusMiddleThirdMb.toFixed(1)} MB → ${r.plateaus ? 'plateaus' : 'DOES NOT plateau'}`);
  const a = result.afterCollection;
  if (a) lines.push(`     after the load and a full garbage collection in every isolate: RSS ${mb(a.rssMb)} MB (anonymous ${mb(a.anonMb)} MB; V8 heaps: Worker ${mb(a.heap.workerUsedMb)} used of ${mb(a.heap.workerTotalMb)} MB, others ${mb(a.heap.othersTotalMb)} MB)`);
  const h = result.workerHeap;
  if (h) lines.push(`Worker isolate's V8 heap: ${mb(h.startMb)} MB at start, ${mb(h.endMb)} MB at the end, peak ${mb(h.peakMb)} MB; slope after the warm-up ${h.slopeMbPerMinute.toFixed(2)} MB/min`);
  const withHeap = result.samples.filter((s) => s.heap);
  if (withHeap.length >= 2) {
    const [first, final] = [withHeap[0]!.heap!, withHeap[withHeap.length - 1]!.heap!];
    const ids = Object.keys(final.totalMbByTarget).sort((a, b) => final.totalMbByTarget[b]! - final.totalMbByTarget[a]!);
    lines.push(`V8 heap per isolate, MB at start → end: ${ids.map((id) => `${id} ${mb(first.totalMbByTarget[id] ?? 0)} → ${mb(final.totalMbByTarget[id]!)}`).join(', ')}`);
  }
  const c = result.cache;
  lines.push(c.samplesRead === 0
    ? 'isolate cache: its figures could not be read (/__bench/cache never answered)'
    : `isolate cache: at most ${mb(c.maxBytesSeen / 1024 / 1024)} MB counted of its ${mb(c.bound / 1024 / 1024)} MB bound in ${c.samplesRead} of ${result.samples.length} samples read → ${c.heldAtEverySample ? 'bound held' : 'BOUND EXCEEDED'}; ${c.evictions} evictions`);
  return `${lines.join('\n')}\n`;
}
