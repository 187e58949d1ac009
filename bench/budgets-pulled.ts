/**
 * The budgets of the two Worker paths that fetch from an upstream, at the sizes issue 34 names (a part of
 * `npm run bench:budgets`, bench/budgets.ts): a 100 MiB provider archive pulled through the network mirror
 * and a proxied module shaped like terraform-aws-modules/vpc (≈ 200 files, ≈ 1 MB of Terraform text; the
 * real one cannot be fetched here, so test/e2e/module-upstream.ts generates one of that size and file count).
 *
 * Then, for CPU per route, the routes of a `terraform init` of published providers (1 and 1,000 versions).
 *
 * Each row is one invocation, as `terraform init` makes them (list, version document, archive), run
 * alone and in sequence in workerd (Miniflare, the Worker as wrangler builds it, every binding call and
 * fetch counted by bench/bench-worker.ts; an archive's background commit waited for and counted with it):
 * storage operations (KV and R2 calls) and subrequests beside the per-invocation limits, the Worker's CPU
 * (its isolate's busy samples × 100 µs while the request was answered, bench/worker-cpu.ts; the archive's
 * commit after the response only as an upper bound: wall-clock samples) beside Free's
 * 10 ms, and the Worker isolate's memory (Runtime.getHeapUsage through workerd's inspector: V8 heap, embedder
 * objects and ArrayBuffer backing stores, the most in use, sampled every 100 ms while the invocation ran) beside 128 MB.
 */
import { join } from 'node:path';
import { ModuleUpstream } from '../test/e2e/module-upstream';
import { freePort } from '../test/e2e/server';
import { INVOCATION_LIMITS } from '../test/fixtures/production/rules';
import { StaticUpstream } from '../test/scripts/mirror/upstream';
import { build } from './build';
import { HOSTNAME, seedLarge, seedSmall } from './seed';
import { providerAddress } from '../src/protocol/address';
import { connectHeaps } from './inspector';
import { countOf, policyRuntime } from './runtime';
import { workerProfiler } from './worker-cpu';
import { textTable } from './report';

/** Free's CPU time per request (Workers "Limits"); Paid allows 30 s by default. */
export const FREE_CPU_MS = 10;
/** Memory per isolate, both plans (Workers "Limits"). */
export const ISOLATE_MEMORY_MB = 128;

export interface PulledRow {
  invocation: string;
  kvReads: number;
  kvWrites: number;
  r2ClassA: number;
  r2ClassB: number;
  storageOperations: number;
  subrequests: number;
  /** The Worker isolate's busy samples while the request was answered (ms). */
  cpuMs: number;
  /** The Worker isolate's busy samples from the request to the end of its after-response work (the pulled archive's commit), ms: wall-clock samples, so an upper bound (bench/worker-cpu.ts); null for an invocation with none. */
  cpuWithBackgroundMs: number | null;
  /**
   * The Worker isolate's largest memory in use while the invocation ran (MB): V8's heap in use, the embedder's
   * (workerd's) objects on it, and ArrayBuffer backing stores outside it (Runtime.getHeapUsage's usedSize +
   * embedderHeapUsedSize + backingStorageSize).
   */
  heapUsedMb: number;
  /** The most of it live: sampled right after a full garbage collection, taken every ~0.5 s while the invocation ran (MB). */
  liveMb: number;
  wallMs: number;
}

const MiB = 1024 * 1024;

/** Measures each invocation of a cold pull of a `providerMb` MiB archive and a cold proxy of a vpc-shaped module. */
export async function benchPulledBudgets(
  work: string,
  log: (line: string) => void = () => {},
  options: { providerMb?: number; moduleFiles?: number } = {},
): Promise<PulledRow[]> {
  const providerMb = options.providerMb ?? 100;
  const moduleFiles = options.moduleFiles ?? 200;
  log(`budgets: building the bench Worker (bench/bench-worker.ts, its counters); a ${providerMb} MiB provider archive, a ${moduleFiles + 5}-file module`);
  const bundle = await build(work, 'bench/bench-worker.ts');
  const provider = await StaticUpstream.start({
    namespace: 'acme',
    type: 'big',
    plainHttp: true,
    releases: ['1.0.0', '1.1.0'].map((version) => ({ version, platforms: ['linux_amd64'], padding: providerMb * MiB })),
  });
  const modules = await ModuleUpstream.start([
    {
      namespace: 'terraform-aws-modules',
      name: 'vpc',
      system: 'aws',
      versions: ['5.0.0', '5.1.0'].map((version) => ({
        version,
        source: `git::https://github.com/terraform-aws-modules/terraform-aws-vpc.git?ref=v${version}`,
        extraFiles: moduleFiles,
      })),
    },
  ]);
  const inspectorPort = await freePort();
  const runtime = await policyRuntime(
    bundle,
    join(work, 'state'),
    {
      providers: [{ source: 'upstream.test/acme/big', versions: '>= 1.0.0', platforms: ['linux_amd64'] }],
      modules: [{ source: 'upstream.test/terraform-aws-modules/*/aws', versions: '>= 1.0.0' }],
      hosts: {
        'upstream.test': { 'providers.v1': `${provider.origin}/v1/providers/`, 'modules.v1': `${modules.origin}/v1/modules/` },
        'codeload.github.com': { archives: `${modules.origin}/codeload/` },
      },
    },
    { inspectorPort },
  );
  const rows: PulledRow[] = [];
  try {
    const r2 = await runtime.mf.getR2Bucket('REGISTRY_R2');
    // The upstream makes its tarballs (git archive) on first request: made now, outside the measured invocations.
    for (const version of ['5.0.0', '5.1.0'])
      await (await fetch(`${modules.origin}/codeload/terraform-aws-modules/terraform-aws-vpc/tar.gz/v${version}`)).arrayBuffer();
    const { ops } = runtime;
    const sum = countOf;
    // workerd's inspector answers one session per isolate: the CPU pass (the profiler) and the heap pass
    // (Runtime.getHeapUsage) each pull their own version cold (1.0.0 and 5.0.0, then 1.1.0 and 5.1.0).
    const pass = async (mode: 'cpu' | 'heap', provider: string, module: string) => {
      const profiler = mode === 'cpu' ? await workerProfiler(inspectorPort, runtime.pid) : null;
      const heaps = mode === 'heap' ? await connectHeaps(inspectorPort) : null;
      const inUse = async () => (await heaps!.sample()).workerInUseMb;
      let index = 0;
      /** One invocation: `path` fetched alone (body read), then `settled` (its background work) awaited. */
      const invocation = async (name: string, path: string, settled?: () => Promise<void>) => {
        await ops();
        await heaps?.collectGarbage('worker'); // what the previous invocation left is not this one's
        let heapUsedMb = heaps ? await inUse() : 0;
        let sampling = heaps !== null;
        let missed = 0;
        let round = 0;
        let liveMb = heapUsedMb;
        const sampler = (async () => {
          while (sampling && heaps) {
            // A sample the busy isolate does not answer within 10 s is skipped (counted in the log).
            heapUsedMb = Math.max(heapUsedMb, await inUse().catch(() => (missed++, 0)));
            if (++round % 5 === 0) {
              await heaps.collectGarbage('worker').catch(() => missed++);
              liveMb = Math.max(liveMb, await inUse().catch(() => (missed++, 0)));
            }
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        })();
        const started = performance.now();
        let response!: Response;
        let text = '';
        const run = async () => {
          response = await fetch(new URL(path, runtime.origin));
          const body = await response.arrayBuffer();
          if (body.byteLength < MiB) text = new TextDecoder().decode(body);
          await settled?.();
        };
        const cpu = profiler ? (await profiler.record(run)).cpu : (await run(), null);
        const wallMs = performance.now() - started;
        sampling = false;
        await sampler;
        if (response.status >= 300 && response.status !== 204) throw new Error(`${name}: GET ${path} answered ${response.status}`);
        const counts = await ops();
        if (mode === 'heap') {
          const row = rows[index++]!;
          row.heapUsedMb = Math.round(heapUsedMb * 10) / 10;
          row.liveMb = Math.round(liveMb * 10) / 10;
          log(`budgets: ${name}: isolate memory peak ${row.heapUsedMb} MB, live ${row.liveMb} MB${missed ? ` (${missed} samples unanswered)` : ''}`);
          return { response, text };
        }
        const row: PulledRow = {
          invocation: name,
          kvReads: sum(counts, /^kv:(get|list)/),
          kvWrites: sum(counts, /^kv:(put|delete)/),
          r2ClassA: sum(counts, /^r2:(put|list|createMultipartUpload)/),
          r2ClassB: sum(counts, /^r2:(get|head)/),
          storageOperations: sum(counts, /^(kv|r2):/),
          subrequests: counts['subrequest:fetch'] ?? 0,
          cpuMs: Math.round((cpu?.requests[0]?.cpuMs ?? 0) * 10) / 10,
          cpuWithBackgroundMs: settled ? Math.round((cpu?.totalCpuMs ?? 0) * 10) / 10 : null,
          heapUsedMb: 0,
          liveMb: 0,
          wallMs: Math.round(wallMs),
        };
        rows.push(row);
        log(`budgets: ${name}: ${JSON.stringify(row)}`);
        return { response, text };
      };
      try {
        const mirror = '/v1/mirror/upstream.test/acme/big';
        const file = `terraform-provider-big_${provider}_linux_amd64.zip`;
        const committed = async () => {
          for (let i = 0; i < 1200; i++) {
            if (await r2.head(`.records/upstream.test/acme/big/${provider}.json`)) return;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          throw new Error(`the pulled version ${provider} was never committed`);
        };
        await invocation(`pull-through ${providerMb} MiB: index.json (cold)`, `${mirror}/index.json`);
        await invocation(`pull-through ${providerMb} MiB: VERSION.json (cold)`, `${mirror}/${provider}.json`);
        await invocation(
          `pull-through ${providerMb} MiB: the archive (cold: streamed, verified, stored, committed)`,
          `/v1/archives/upstream.test/acme/big/${provider}/${file}`,
          committed,
        );
        await invocation(`pull-through ${providerMb} MiB: the archive (held)`, `/v1/archives/upstream.test/acme/big/${provider}/${file}`);
        const vpc = '/v1/modules/terraform-aws-modules/vpc/aws';
        const label = `module proxy, vpc-shaped (${moduleFiles + 5} files)`;
        await invocation(`${label}: versions (cold)`, `${vpc}/versions`);
        const download = await invocation(`${label}: download (cold: fetched, checked, repacked, stored)`, `${vpc}/${module}/download`);
        const target = download.response.headers.get('x-terraform-get');
        if (!target) throw new Error('module download: no X-Terraform-Get');
        await invocation(`${label}: the package`, target);

        // The routes of a `terraform init` of a published provider, each in an isolate that has not read its
        // documents yet (the first request for each) in the CPU pass: a provider with 1 version and one with 1,000.
        await invocation('read: discovery', '/.well-known/terraform.json');
        for (const [type, version, label] of [
          ['small', '1.0.0', '1 version'],
          ['large', newest, '1,000 versions'],
        ] as const) {
          await invocation(`read (${label}): versions`, `/v1/providers/bench/${type}/versions`);
          const doc = await invocation(`read (${label}): download document`, `/v1/providers/bench/${type}/${version}/download/linux/amd64`);
          await invocation(`read (${label}): mirror index.json`, `/v1/mirror/${HOSTNAME}/bench/${type}/index.json`);
          await invocation(`read (${label}): mirror VERSION.json`, `/v1/mirror/${HOSTNAME}/bench/${type}/${version}.json`);
          if (type === 'small') {
            const url = new URL(
              (JSON.parse(doc.text) as { download_url: string }).download_url,
              `${runtime.origin}/v1/providers/bench/${type}/${version}/download/linux/amd64`,
            );
            await invocation(`read (${label}): the archive`, `${url.pathname}${url.search}`);
          }
        }
      } finally {
        profiler?.close();
        heaps?.close();
      }
    };
    log('budgets: seeding published providers with 1 and 1,000 versions (bench/seed.ts)');
    await seedSmall(runtime, providerAddress(HOSTNAME, 'bench', 'small'), '1.0.0');
    const newest = await seedLarge(runtime, providerAddress(HOSTNAME, 'bench', 'large'), 1000);
    await pass('cpu', '1.0.0', '5.0.0');
    await pass('heap', '1.1.0', '5.1.0');
  } finally {
    await runtime.dispose();
    await provider.stop();
    await modules.stop();
  }
  return rows;
}

/** The rows as a table, each figure beside its limit (Free plan where the plans differ). */
export function pulledTable(rows: readonly PulledRow[]): string {
  const free = INVOCATION_LIMITS.free;
  const head = [
    'invocation',
    'KV r/w',
    'R2 A/B',
    `storage ops (of ${free.storageOperations})`,
    `subrequests (of ${free.subrequests} Free)`,
    `CPU ms (of ${FREE_CPU_MS} Free)`,
    'CPU ms with after-response work (upper bound)',
    `isolate memory MB, peak / live (of ${ISOLATE_MEMORY_MB})`,
    'wall ms',
  ];
  const body = rows.map((r) => [
    r.invocation,
    `${r.kvReads}/${r.kvWrites}`,
    `${r.r2ClassA}/${r.r2ClassB}`,
    String(r.storageOperations),
    String(r.subrequests),
    `${r.cpuMs}${r.cpuMs > FREE_CPU_MS ? ' OVER Free' : ''}`,
    r.cpuWithBackgroundMs === null ? '—' : String(r.cpuWithBackgroundMs),
    `${r.heapUsedMb} / ${r.liveMb}`,
    String(r.wallMs),
  ]);
  return textTable(head, body);
}
