/**
 * `npm run bench` — the registry in its real runtime (workerd via Miniflare's API, the Worker as wrangler builds
 * it), loopback only, bounded in time: every route against the floor in production settings (bench/production.ts),
 * KV reads per request, the edge cache, publish cost as history grows, download counting, the publish API's CPU per
 * request, the write paths against the native floor, what a `terraform init` costs and the budgets per
 * invocation. Prints tables; `-- --json` prints one JSON object instead; `-- --quick` shortens every part;
 * `-- --soak [MINUTES]` runs the memory soak instead (bench/soak.ts). Targets are reported as met or missed, never
 * as failures.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { wrkMissing } from './wrk';
import { benchReads } from './reads';
import { build } from './build';
import { soak } from './soak';
import { benchCost, costTable, costTargets } from './cost';
import { benchBudgets, benchPublishScale, budgetsTable } from './budgets';
import { benchPulledBudgets, pulledTable } from './budgets-pulled';
import { benchDownloadCounting, countingTable } from './download-counting';
import { benchPublishApi, publishApiTable } from './publish-api';
import { benchWriteFloor, writeFloorTable } from './write-floor';
import { benchSigning } from './signing';
import { benchProduction, productionTable, productionTargets } from './production';
import { countingTargets, publishApiTargets, publishScaleTargets, readTargets, writeFloorTargets } from './targets';
import { flag, log, option, targetLines } from './report';
import { withWebSocket } from './worker-cpu';

const json = flag('json');
const quick = flag('quick');
const ROUNDS = quick ? 1 : 3;

async function main(): Promise<void> {
  const started = Date.now();
  const loadAtStart = loadavg()[0]!;
  // The figures are only as good as the machine is quiet: say so when something else is running.
  if (loadAtStart > 0.5 * cpus().length)
    log(`warning: load average ${loadAtStart.toFixed(2)} on ${cpus().length} CPUs before starting; figures will be low and noisy`);
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-bench-'));
  try {
    log('building the Worker (wrangler deploy --dry-run) and the bench Worker (bench/bench-worker.ts)');
    const bundle = await build(work, null);
    const benchBundle = await build(work, 'bench/bench-worker.ts');
    const bundleGzip = gzipSync(await readFile(bundle)).byteLength;

    log('production settings: every route, public and private (a read token), each run paired with a floor run (bench/production.ts)');
    const production = await benchProduction(bundle, { seconds: quick ? 1 : 5, rounds: ROUNDS, connections: 50, warmUp: !quick, log });
    log('KV and R2 reads per request: a fresh isolate, again, and a fresh isolate of a location whose edge cache has it');
    const reads = await benchReads(benchBundle, work);
    log(`publish at ${quick ? '1 and 100' : '1, 100 and 1,000'} existing versions: wall time and storage requests`);
    const publishScale = await benchPublishScale(work, quick ? [1, 100] : [1, 100, 1000], quick ? 1 : 3, log);
    log('download counting: CPU, object requests and storage rows per download');
    const downloadCounting = await benchDownloadCounting(work, { quick, log });
    log('publish API: Worker CPU per request of a small keyless publish, and the storage floor');
    const publishApi = await benchPublishApi(work, log);
    log("write paths: Worker CPU per MiB against the runtime's native floor, and signing per key type (bench/write-floor.ts)");
    const writeFloor = { paths: await benchWriteFloor(work, quick ? [1, 10] : [1, 10, 50, 200], log), signing: await benchSigning(work, log) };
    log('cost: requests, KV and R2 reads of a real terraform init, cold and with a warm edge cache');
    const cost = await benchCost(work, { quick, log });
    log('budgets: storage operations per invocation of each write path at realistic sizes (bench/budgets.ts)');
    const budgets = await benchBudgets(work, log);
    log('budgets: a 100 MiB provider pulled through, a vpc-shaped module proxied, CPU per route and isolate memory (bench/budgets-pulled.ts)');
    const pulledBudgets = await benchPulledBudgets(work, log);

    const targets = [
      ...productionTargets(production),
      ...readTargets(reads, bundleGzip),
      ...costTargets(cost),
      ...publishScaleTargets(publishScale),
      ...publishApiTargets(publishApi),
      ...countingTargets(downloadCounting),
      ...writeFloorTargets(writeFloor.paths),
    ];
    const machine = { cpus: cpus().length, node: process.version, loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadavg()[0]! };
    const result = {
      ...{ machine, settings: { rounds: ROUNDS, quick }, production, reads, publishScale, downloadCounting, publishApi, writeFloor },
      ...{ bundle: { gzipBytes: bundleGzip }, cost, budgets, pulledBudgets, targets, seconds: (Date.now() - started) / 1000 },
    };
    if (json) return void process.stdout.write(`${JSON.stringify(result)}\n`);
    const kvR2 = (r: { kv: number; r2: number }) => `${r.kv}/${r.r2}`;
    const lines = [
      `edge-registry bench${quick ? ' (quick)' : ''} — machine: ${machine.cpus} CPUs, load average ${loadAtStart.toFixed(2)} at start, ${machine.loadAverageAtEnd.toFixed(2)} at end${loadAtStart > machine.cpus / 2 ? ' — busy: figures are low and noisy' : ''}`,
      '',
      productionTable(production, ROUNDS),
      `KV/R2 reads per request — first in a fresh isolate; again; first in a fresh isolate of a location that has it: ${reads.map((r) => `${r.name} ${kvR2(r.first)}; ${kvR2(r.again)}; ${kvR2(r.freshIsolate)}`).join(' | ')}`,
      `a 3-platform publish's storage work (publishVersion, as the commit runs it) into a provider with N versions: ${publishScale.map((r) => `N = ${r.existingVersions}: ${r.seconds.toFixed(2)} s, ${r.requests} storage requests`).join('; ')}`,
      ...countingTable(downloadCounting),
      ...publishApiTable(publishApi),
      '',
      "write paths, Worker CPU per MiB against the runtime's native floor (bench/write-floor.ts):",
      ...writeFloorTable(writeFloor.paths),
      `signature by a registry-held key, Worker CPU: ${writeFloor.signing.map((r) => `${r.key} ${r.cpuMs.toFixed(2)} ms`).join('; ')}`,
      `bundle: ${(bundleGzip / 1024).toFixed(1)} KiB gzip`,
      '',
      ...costTable(cost),
      '',
      'budgets per invocation (Cloudflare: 1,000 storage operations per invocation; Free: 1,000 KV writes a day)',
      budgetsTable(budgets),
      '',
      'budgets per invocation of the pulled and read routes (1,000 storage operations; Free: 50 subrequests, 10 ms CPU; 128 MB per isolate)',
      pulledTable(pulledBudgets),
      '',
      'targets',
      ...targetLines(targets),
      '',
      `total ${result.seconds.toFixed(0)} s`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const missing = wrkMissing();
if (missing) {
  process.stderr.write(`error: ${missing}\n`);
  process.exit(1);
}
// The soak reads workerd's heaps, and the publish API figures profile the Worker, over its inspector (a
// WebSocket): Node 20 has one behind a flag, so without it the bench runs again with the flag and exits with its code.
await withWebSocket();
if (!flag('soak')) await main();
else {
  // `--soak [MINUTES]` (default 10) runs the memory soak (bench/soak.ts) instead of the bench.
  const given = option('soak');
  const minutes = given !== undefined && /^\d+(\.\d+)?$/.test(given) ? Number(given) : 10;
  await soak(minutes, json, { cachedOnly: flag('cached'), rawHelpers: flag('raw-helpers') });
}
