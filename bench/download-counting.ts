/**
 * What counting a download costs (src/downloads/), in workerd with Miniflare's real SQLite-backed Durable Object,
 * through bench/bench-worker.ts: workerd's CPU per archive GET (N handled inside one request) with counting off, on
 * (the 500 ms window: one batch) and unbatched (DOWNLOAD_BATCH_MS 0: one object request per download, its SQLite
 * work included, which Cloudflare bills to the object); object requests per download under concurrent load and
 * sparse; SQLite rows per batch of 1 and of 12 items (what DO storage bills); and that the object's total after the
 * load equals the downloads sent. `npx tsx bench/download-counting.ts [--quick] [--json]` runs it alone.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BATCH_MS } from '../src/downloads/count';
import type { StorageOps } from '../src/downloads/counter';
import { build } from './build';
import { cpuNanos } from './proc';
import { opsOf, startRuntime } from './runtime';
import { HOSTNAME, archivePath, seedSmall } from './seed';
import { flag, log, script } from './report';

export type CountingFigures = Awaited<ReturnType<typeof benchDownloadCounting>>;

export async function benchDownloadCounting(work: string, options: { quick?: boolean; log?: (line: string) => void } = {}) {
  const log = options.log ?? (() => {});
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/bench-worker.ts') }, undefined, { downloads: { batchMs: BATCH_MS } });
  try {
    const small = { hostname: HOSTNAME, namespace: 'bench', type: 'counted' };
    await seedSmall(runtime, small, '1.0.0');
    const path = archivePath(small, '1.0.0');
    const get = async (p: string) => {
      const response = await fetch(`${runtime.origin}${p}`);
      const body = await response.arrayBuffer();
      if (response.status !== 200 && response.status !== 204) throw new Error(`GET ${p}: ${response.status} ${new TextDecoder().decode(body)}`);
      return body;
    };
    const rpcs = async () => (await opsOf(runtime))['downloads:get'] ?? 0;

    // CPU per download, each mode after a warm-up; workerd's CPU until the batches it sent settled.
    const n = options.quick ? 500 : 2000;
    const cpu = { n, offMicros: 0, onMicros: 0, unbatchedMicros: 0 };
    for (const mode of ['off', 'on', 'unbatched'] as const) {
      await get(`/__bench/loop?n=${Math.ceil(n / 10)}&mode=${mode}&path=${encodeURIComponent(path)}`);
      await sleep(BATCH_MS + 300);
      const before = cpuNanos(runtime.pid);
      await get(`/__bench/loop?n=${n}&mode=${mode}&path=${encodeURIComponent(path)}`);
      await sleep(BATCH_MS + 300);
      cpu[`${mode}Micros`] = (cpuNanos(runtime.pid) - before) / 1000 / n;
      log(`download counting: ${mode}: ${cpu[`${mode}Micros`].toFixed(1)} µs of workerd CPU per download`);
    }

    // Under load: `concurrency` clients downloading one archive from one isolate as fast as they can.
    const counted = '/v1/downloads/providers/bench/counted?days=1';
    const total = async () =>
      ((await (await fetch(`${runtime.origin}${counted}`, { headers: { 'cache-control': 'no-cache' } })).json()) as { total: number }).total;
    const before = await total();
    await rpcs();
    const downloads = options.quick ? 500 : 2000;
    const concurrency = 20;
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < downloads) await get(path);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    await sleep(BATCH_MS * 2 + 500);
    const load = { downloads, concurrency, seconds, rpcs: await rpcs(), counted: (await total()) - before };
    log(`download counting: ${downloads} downloads in ${seconds.toFixed(1)} s: ${load.rpcs} object requests, ${load.counted} counted`);

    // Sparse: downloads further apart than the window.
    await rpcs();
    for (let i = 0; i < 3; i++) await get(path).then(() => sleep(BATCH_MS + 200));
    const sparse = { downloads: 3, rpcs: await rpcs() };

    const add = async (items: number) => JSON.parse(new TextDecoder().decode(await get(`/__bench/add?items=${items}&name=storage`))) as StorageOps;
    const storage = { firstBatchOfDay: await add(1), batchOf1: await add(1), batchOf12: await add(12) };
    return { windowMs: BATCH_MS, cpu, load, sparse, storage };
  } finally {
    await runtime.dispose();
  }
}

/** The lines `npm run bench` prints. */
export function countingTable(f: CountingFigures): string[] {
  const ops = (o: StorageOps) => `${o.rowsRead} rows read, ${o.rowsWritten} written`;
  return [
    `download counting (batch window ${f.windowMs} ms, one SQLite Durable Object per package):`,
    `  workerd CPU per archive GET (${f.cpu.n} in one request): counting off ${f.cpu.offMicros.toFixed(1)} µs, on ${f.cpu.onMicros.toFixed(1)} µs (+${(f.cpu.onMicros - f.cpu.offMicros).toFixed(1)} µs), one object request per download ${f.cpu.unbatchedMicros.toFixed(1)} µs (+${(f.cpu.unbatchedMicros - f.cpu.offMicros).toFixed(1)} µs, the object's SQLite included)`,
    `  object requests: ${f.load.rpcs} for ${f.load.downloads} downloads by ${f.load.concurrency} concurrent clients in ${f.load.seconds.toFixed(1)} s (${(f.load.rpcs / f.load.downloads).toFixed(4)} per download; ≤ 1 per ${f.windowMs} ms per isolate); ${f.sparse.rpcs} for ${f.sparse.downloads} downloads further apart than the window`,
    `  storage per batch: 1 item ${ops(f.storage.batchOf1)}; 12 items ${ops(f.storage.batchOf12)}; the day's first batch ${ops(f.storage.firstBatchOfDay)} (table setup and retention check); KV and R2: 0`,
    `  exact: ${f.load.counted} counted of ${f.load.downloads} downloads${f.load.counted === f.load.downloads ? '' : ' — NOT EXACT'}`,
  ];
}

await script(import.meta, 'counting', async (work) => {
  const figures = await benchDownloadCounting(work, { quick: flag('quick'), log });
  console.log(flag('json') ? JSON.stringify({ downloadCounting: figures }) : countingTable(figures).join('\n'));
});
