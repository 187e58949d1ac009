/**
 * `npm run bench` — the registry under load in its real runtime (workerd via
 * Miniflare's API, the Worker as wrangler builds it), loopback only, bounded
 * in time. Prints a table; `-- --json` prints one JSON object instead;
 * `-- --quick` shortens every load run so the whole bench takes under a
 * minute; `-- --soak [MINUTES]` runs the memory soak instead (bench/soak.ts).
 * Targets are reported as met or missed, never as failures.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { cpuMicros, rssBytes } from './proc';
import { startRuntime, type Runtime } from './runtime';
import { HOSTNAME, archivePath, seedLarge, seedLargeArchive, seedSmall } from './seed';
import { MODULE_ROUTES, seedModules } from './seed-modules';
import { benchModulePublish } from './publish-module';
import { wrk, wrkMissing } from './wrk';
import { benchPublish } from './publish';
import { benchPublishScale } from './publish-scale';
import { benchEdgeCache } from './edge-cache';
import { build } from './build';
import { soak } from './soak';
import { benchCost, costTargets } from './cost';
import { benchBudgets, budgetsTable } from './budgets';
import { benchPulledBudgets, pulledTable } from './budgets-pulled';
import { benchDownloadCounting } from './download-counting';
import { benchPublishApi } from './publish-api';
import { benchSigning } from './held-key-signing';
import { benchWriteFloor } from './write-floor';
import { benchProduction, productionTable, productionTargets } from './production';
import {
  countingTargets,
  edgeCacheTargets,
  evaluate,
  floorP99Of,
  median,
  publishApiTargets,
  publishScaleTargets,
  writeFloorTargets,
  type FloorP99,
  type RouteFigures,
} from './targets';
import { round1, strip, table } from './report';
import { withWebSocket } from './worker-cpu';

const args = new Set(process.argv.slice(2));
const json = args.has('--json');
const quick = args.has('--quick');
const SECONDS = quick ? 1 : 5;
const ROUNDS = quick ? 1 : 3;
const CONNECTIONS = 50;
const ARCHIVE_BYTES = 200 * 1024 * 1024;

const log = (message: string) => process.stderr.write(`bench: ${message}\n`);

async function main(): Promise<void> {
  const started = Date.now();
  const { loadavg, cpus } = await import('node:os');
  const loadAtStart = loadavg()[0]!;
  // The figures are only as good as the machine is quiet: say so when something else is running.
  if (loadAtStart > 0.5 * cpus().length)
    log(`warning: load average ${loadAtStart.toFixed(2)} on ${cpus().length} CPUs before starting; figures will be low and noisy`);
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-bench-'));
  try {
    log('building the Worker (wrangler deploy --dry-run)');
    const bundle = await build(work, null);
    const countingBundle = await build(work, 'bench/bench-worker.ts');
    const bundleGzip = gzipSync(await readFile(bundle)).byteLength;

    log('floor (a constant-JSON Worker) and the registry, in the same runtime');
    const floorRuntime = await startRuntime({
      script: `const body = JSON.stringify({ 'providers.v1': '/v1/providers/' });
export default { fetch() { return new Response(body, { headers: { 'content-type': 'application/json' } }); } };`,
    });
    const small = { hostname: HOSTNAME, namespace: 'bench', type: 'small' };
    const large = { hostname: HOSTNAME, namespace: 'bench', type: 'large' };
    const routesOf = (type: string, version: string) => [
      { name: 'versions', path: `/v1/providers/bench/${type}/versions` },
      { name: 'download doc', path: `/v1/providers/bench/${type}/${version}/download/linux/amd64` },
      { name: 'mirror index', path: `/v1/mirror/${HOSTNAME}/bench/${type}/index.json` },
      { name: 'mirror version', path: `/v1/mirror/${HOSTNAME}/bench/${type}/${version}.json` },
      // Pages for people (src/pages/), against the versions route above.
      { name: 'page: home', path: '/' },
      { name: 'page: provider', path: `/providers/bench/${type}` },
      { name: 'page: version', path: `/providers/bench/${type}/${version}` },
    ];

    const registry = await startRuntime({ bundlePath: bundle }, join(work, 'state'));
    let floor: RouteFigures;
    let floorP99: FloorP99;
    let smallRoutes: RouteFigures[];
    let largeRoutes: RouteFigures[];
    let archive: { seconds: number; mbPerSecond: number; rssGrowthMb: number; baselineRssMb: number };
    try {
      log('seeding 1 version × 12 platforms and 1,000 versions × 12 platforms');
      const seedStart = Date.now();
      await seedSmall(registry, small, '1.0.0');
      const newest = await seedLarge(registry, large, 1000);
      await seedModules(registry); // modules.v1: 1 and 1,000 versions
      log(`seeded in ${((Date.now() - seedStart) / 1000).toFixed(1)} s`);
      const plan = [
        { runtime: floorRuntime, group: 'floor', name: 'floor (constant JSON)', path: '/' },
        { runtime: registry, group: 'small', name: 'discovery', path: '/.well-known/terraform.json' },
        ...routesOf('small', '1.0.0').map((r) => ({ runtime: registry, group: 'small', ...r })),
        ...routesOf('large', newest).map((r) => ({ runtime: registry, group: 'large', ...r })),
        ...MODULE_ROUTES.small.map((r) => ({ runtime: registry, group: 'small', ...r })),
        ...MODULE_ROUTES.large.map((r) => ({ runtime: registry, group: 'large', ...r })),
      ];
      // Interleaved rounds, medians: other work on a shared 2-core machine hits every route alike.
      const rounds: RouteFigures[][] = plan.map(() => []);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [index, item] of plan.entries()) rounds[index]!.push(await load(item.runtime, item.name, item.path));
      }
      const figures = rounds.map(median);
      floor = figures[0]!;
      floorP99 = floorP99Of(rounds[0]!);
      if (floorP99.unstable)
        log(`the floor's own p99 varied ${floorP99.spread.toFixed(1)}× between runs (${floorP99.runsMs.join(', ')} ms): p99 ratios are noise this time`);
      smallRoutes = figures.filter((_, i) => plan[i]!.group === 'small');
      largeRoutes = figures.filter((_, i) => plan[i]!.group === 'large');

      log('archive: storing 200 MB in R2');
      await seedLargeArchive(registry, small, '9.0.0', ARCHIVE_BYTES);
    } finally {
      await registry.dispose();
      await floorRuntime.dispose();
    }
    // A fresh workerd on the same on-disk state, so its RSS holds nothing of the upload.
    log('archive: 200 MB through R2 → Worker → curl, on a fresh workerd');
    const server = await startRuntime({ bundlePath: bundle }, join(work, 'state'));
    try {
      archive = await download(server, archivePath(small, '9.0.0'));
    } finally {
      await server.dispose();
    }

    log('production settings: every route, public and private (a read token), each run paired with a floor run (bench/production.ts)');
    const production = await benchProduction(bundle, { seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS, warmUp: !quick, log });

    log('KV reads per request and Worker JS per request (counting wrapper around the same Worker)');
    const isolate = await inIsolate(countingBundle, small, quick ? null : large, [...routesOf('small', '1.0.0'), ...MODULE_ROUTES.small], (v) => [
      ...routesOf('large', v),
      ...MODULE_ROUTES.large,
    ]);
    const kvReads = isolate.kvReads;
    const js = (group: string, name: string) => isolate.jsMicros.find((j) => j.group === group && j.name === name)?.micros ?? null;

    log('edge cache: R2 and KV reads per request across fresh isolates; archive from R2 vs from the cache');
    const edgeCache = await benchEdgeCache(countingBundle, work, quick, log);

    log('publish: hashing and a local publish');
    const publish = await benchPublish(work, quick);
    log(`publish at ${quick ? '1 and 100' : '1, 100 and 1,000'} existing versions: wall time and storage requests`);
    const publishScale = await benchPublishScale(work, quick ? [1, 100] : [1, 100, 1000], quick ? 1 : 3, log);
    log('publish-module: a module with 1 MB and with 50 MB of data, local publish');
    const modulePublish = await benchModulePublish(work);
    for (const m of modulePublish.sizes) log(`publish-module ${m.mb} MB (package ${(m.packageBytes / 1e6).toFixed(1)} MB): ${m.seconds.toFixed(2)} s`);

    log('download counting: CPU, object requests and storage rows per download');
    const downloadCounting = await benchDownloadCounting(work, { quick, log });
    log('publish API: wall time at 1 and 200 versions, Worker CPU per request (3-platform provider, 50 MB module)');
    const publishApi = await benchPublishApi(work, log);
    log("write paths: Worker CPU per MiB against the runtime's native floor, and signing per key type (bench/write-floor.ts)");
    const writeFloor = { paths: await benchWriteFloor(work, quick ? [1, 10] : [1, 10, 50, 200], log), signing: await benchSigning(work, log) };

    log('cost: requests, KV and R2 reads of a real terraform init, cold and with a warm edge cache');
    const cost = await benchCost(work, { quick, log });

    log('budgets: storage operations per invocation of each write path at realistic sizes, and the Free daily budget (bench/budgets.ts)');
    const budgets = await benchBudgets(log);
    log('budgets: a 100 MiB provider pulled through, a vpc-shaped module proxied, CPU per route and isolate memory (bench/budgets-pulled.ts)');
    const pulledBudgets = await benchPulledBudgets(log);

    const targets = [
      ...evaluate(floor, floorP99, smallRoutes, largeRoutes, kvReads, archive, publish, bundleGzip),
      ...edgeCacheTargets(edgeCache),
      ...costTargets(cost),
      ...publishScaleTargets(publishScale),
      ...publishApiTargets(publishApi),
      ...countingTargets(downloadCounting),
      ...writeFloorTargets(writeFloor.paths),
      ...productionTargets(production),
    ];
    const result = {
      machine: { cpus: cpus().length, node: process.version, loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadavg()[0]! },
      settings: { connections: CONNECTIONS, secondsPerRun: SECONDS, rounds: ROUNDS, quick },
      floor: { ...strip(floor), workerJsMicrosPerRequest: round1(js('floor', floor.name)) },
      floorP99,
      routes: smallRoutes.map((r) => ({
        ...strip(r),
        workerJsMicrosPerRequest: round1(js('small', r.name)),
        rpsRatioToFloor: r.rps / floor.rps,
        p99RatioToFloor: r.p99Ms / floor.p99Ms,
      })),
      routes1000Versions: largeRoutes.map((r) => {
        const base = smallRoutes.find((s) => s.name === r.name)!;
        return {
          ...strip(r),
          workerJsMicrosPerRequest: round1(js('large', r.name)),
          meanRatioTo1Version: r.meanMs / base.meanMs,
          p50RatioTo1Version: r.p50Ms / base.p50Ms,
          p99RatioTo1Version: r.p99Ms / base.p99Ms,
          rpsRatioToFloor: r.rps / floor.rps,
        };
      }),
      kvReads,
      archive,
      edgeCache,
      publish,
      publishScale,
      modulePublish,
      downloadCounting,
      publishApi,
      writeFloor,
      bundle: { gzipBytes: bundleGzip },
      cost,
      production,
      budgets,
      pulledBudgets,
      targets,
      seconds: (Date.now() - started) / 1000,
    };
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else
      process.stdout.write(
        `${productionTable(production, ROUNDS)}\n${table(result)}\n\nbudgets per invocation (Cloudflare: 1,000 storage operations per invocation; Free: 1,000 KV writes a day)\n${budgetsTable(budgets)}\n\nbudgets per invocation of the pulled and read routes (1,000 storage operations; Free: 50 subrequests, 10 ms CPU; 128 MB per isolate)\n${pulledTable(pulledBudgets)}\n`,
      );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function load(runtime: Runtime, name: string, path: string): Promise<RouteFigures> {
  const url = `${runtime.origin}${path}`;
  const check = await fetch(url);
  const body = await check.arrayBuffer();
  if (!isSuccess(check.status)) throw new Error(`${name}: GET ${path} answered ${check.status}`);
  if (!quick) await wrk(url, { connections: CONNECTIONS, seconds: 1 }); // warm up (JIT, isolate cache)
  const cpuBefore = cpuMicros(runtime.pid);
  const result = await wrk(url, { connections: CONNECTIONS, seconds: SECONDS });
  const cpu = cpuMicros(runtime.pid) - cpuBefore;
  if (result.non2xx > 0 || result.errors > 0) log(`${name}: ${result.non2xx} non-2xx responses, ${result.errors} socket errors`);
  log(`${name} ${path}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, ${(cpu / result.requests).toFixed(0)} µs CPU/req`);
  return { name, path, bytes: body.byteLength, ...result, cpuMicrosPerRequest: cpu / result.requests };
}

/** Downloads the archive with curl while sampling workerd's RSS. */
async function download(runtime: Runtime, path: string) {
  await new Promise((resolve) => setTimeout(resolve, 500));
  const baseline = rssBytes(runtime.pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(runtime.pid))), 20);
  const started = process.hrtime.bigint();
  const output = await new Promise<string>((resolve, reject) => {
    const curl = spawn('curl', ['-s', '-S', '-o', '/dev/null', '-w', '%{http_code} %{size_download}', `${runtime.origin}${path}`]);
    let out = '';
    curl.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    curl.on('error', reject);
    curl.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`curl exited with ${code}`))));
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  clearInterval(sampler);
  peak = Math.max(peak, rssBytes(runtime.pid));
  const [status, size] = output.split(' ').map(Number);
  if (status !== 200 || size !== ARCHIVE_BYTES) throw new Error(`archive download: HTTP ${status}, ${size} bytes`);
  const archive = {
    seconds,
    mbPerSecond: ARCHIVE_BYTES / 1024 / 1024 / seconds,
    rssGrowthMb: (peak - baseline) / 1024 / 1024,
    baselineRssMb: baseline / 1024 / 1024,
  };
  log(`archive: ${archive.mbPerSecond.toFixed(0)} MB/s, RSS +${archive.rssGrowthMb.toFixed(1)} MB`);
  return archive;
}

/**
 * With the counting wrapper around the same Worker: KV reads on a cold
 * isolate (first request) and again at once (cached), per route; and the
 * Worker's own JavaScript CPU per request (/__bench/loop: N requests handled
 * inside one, so the HTTP stack is left out), against a constant Response.
 */
async function inIsolate(
  bundle: string,
  small: { hostname: string; namespace: string; type: string },
  large: { hostname: string; namespace: string; type: string } | null,
  routes: { name: string; path: string }[],
  largeRoutes: (version: string) => { name: string; path: string }[],
) {
  const runtime = await startRuntime({ bundlePath: bundle });
  try {
    await seedSmall(runtime, small, '1.0.0');
    const newest = large ? await seedLarge(runtime, large, 1000) : null;
    await seedModules(runtime);
    const reads = async () => ((await (await fetch(`${runtime.origin}/__bench/kv-reads?reset`)).json()) as { reads: number }).reads;
    const kvReads: { name: string; first: number; cached: number }[] = [];
    const all = [{ name: 'discovery', path: '/.well-known/terraform.json' }, ...routes];
    for (const route of all) {
      await reads();
      const first = await fetch(`${runtime.origin}${route.path}`);
      await first.arrayBuffer();
      const afterFirst = await reads();
      const again = await fetch(`${runtime.origin}${route.path}`);
      await again.arrayBuffer();
      const afterSecond = await reads();
      if (!isSuccess(first.status) || !isSuccess(again.status)) throw new Error(`${route.name} answered ${first.status}/${again.status}`);
      kvReads.push({ name: route.name, first: afterFirst, cached: afterSecond });
    }
    const loop = async (path: string, n: number) => {
      const url = (count: number) => `${runtime.origin}/__bench/loop?n=${count}&path=${encodeURIComponent(path)}`;
      await (await fetch(url(Math.ceil(n / 10)))).arrayBuffer(); // warm up
      const before = cpuMicros(runtime.pid);
      const response = await fetch(url(n));
      await response.arrayBuffer();
      if (response.status !== 204) throw new Error(`loop over ${path} answered ${response.status}`);
      return (cpuMicros(runtime.pid) - before) / n;
    };
    const n = quick ? 5000 : 20000;
    const jsMicros: { name: string; group: string; micros: number }[] = [{ name: 'floor (constant JSON)', group: 'floor', micros: await loop('-', n) }];
    for (const route of all) jsMicros.push({ name: route.name, group: 'small', micros: await loop(route.path, n) });
    if (newest) {
      for (const route of largeRoutes(newest))
        jsMicros.push({ name: route.name, group: 'large', micros: await loop(route.path, route.name === 'versions' ? n / 20 : n) });
    }
    return { kvReads, jsMicros };
  } finally {
    await runtime.dispose();
  }
}

// `--soak [MINUTES]` (default 10) runs the memory soak (bench/soak.ts) instead of the bench.
const soakAt = process.argv.indexOf('--soak');
const missing = wrkMissing();
if (missing) {
  process.stderr.write(`error: ${missing}\n`);
  process.exit(1);
}
// The soak reads workerd's heaps, and the publish API figures profile the Worker, over its inspector (a
// WebSocket): Node 20 has one behind a flag, so without it the bench runs again with the flag and exits with its code.
await withWebSocket();
if (soakAt === -1) {
  await main();
} else {
  const given = process.argv[soakAt + 1];
  const minutes = given !== undefined && /^\d+(\.\d+)?$/.test(given) ? Number(given) : 10;
  const snapshotAt = process.argv.indexOf('--snapshots');
  await soak(minutes, json, {
    cachedOnly: args.has('--cached'),
    rawHelpers: args.has('--raw-helpers'),
    ...(snapshotAt !== -1 && process.argv[snapshotAt + 1] ? { snapshotDir: process.argv[snapshotAt + 1]! } : {}),
  });
}

/** 200, or 204 for modules.v1 download (its answer is a header). */
function isSuccess(status: number): boolean {
  return status === 200 || status === 204;
}
