/**
 * Every metadata route in production settings — gzip documents on, as
 * Terraform and OpenTofu ask (Accept-Encoding: gzip), in public mode and in
 * private mode with a read token — against the floor (a constant-JSON Worker
 * in the same workerd build), measured in the same run. On a shared machine
 * other work hits every run alike only if the runs are close together, so
 * each route's load runs between two floor loads (the one after it is the
 * next route's before), and its ratio is taken against their mean, which
 * cancels a load that rises or falls steadily across the three; the median
 * of the rounds' ratios is reported.
 * Target: ≥ 0.8 × the floor for every line (issue 38).
 *
 * `npx tsx bench/production.ts [--quick] [--seconds N] [--rounds N] [--only NAME] [--bundle PATH]` runs
 * only this;
 * `npm run bench` runs it as part of the whole.
 */
import { createToken } from '../scripts/lib/tokens';
import type { KvStore } from '../src/store/store';
import { build } from './build';
import { cpuMicros } from './proc';
import { startRuntime, type Runtime } from './runtime';
import { HOSTNAME, MODULE_ROUTES, seedLarge, seedModules, seedSmall } from './seed';
import type { Target } from './report';
import { wrk } from './wrk';
import { flag, log, median, option, script } from './report';

export interface ProductionLine {
  mode: 'public' | 'private';
  name: string;
  path: string;
  /** Content-Encoding of the answer (gzip when the document is compressed). */
  encoding: string | null;
  rps: number;
  floorRps: number;
  /** Median of the rounds' ratios (route ÷ the mean of the floor runs just before and just after it). */
  ratio: number;
  ratios: number[];
  cpuMicrosPerRequest: number;
  floorCpuMicrosPerRequest: number;
}

const FLOOR_SCRIPT = `const body = JSON.stringify({ 'providers.v1': '/v1/providers/' });
export default { fetch() { return new Response(body, { headers: { 'content-type': 'application/json' } }); } };`;

const SIGNING_SECRET = 'bench-production-signing-secret-0123456789';

/** The routes measured, by name and path (1 version and 1,000 versions × 12 platforms, modules too). */
export function productionRoutes(large: string): { name: string; path: string; publicOnly?: boolean }[] {
  const of = (type: string, version: string, suffix: string) => [
    { name: `versions${suffix}`, path: `/v1/providers/bench/${type}/versions` },
    { name: `download doc${suffix}`, path: `/v1/providers/bench/${type}/${version}/download/linux/amd64` },
    { name: `mirror index${suffix}`, path: `/v1/mirror/${HOSTNAME}/bench/${type}/index.json` },
    { name: `mirror version${suffix}`, path: `/v1/mirror/${HOSTNAME}/bench/${type}/${version}.json` },
  ];
  return [
    { name: 'discovery', path: '/.well-known/terraform.json' },
    ...of('small', '1.0.0', ''),
    ...of('large', large, ' (1,000 v)'),
    { name: 'module versions', path: MODULE_ROUTES.small[0]!.path },
    { name: 'module download', path: MODULE_ROUTES.small[1]!.path },
    { name: 'module versions (1,000 v)', path: MODULE_ROUTES.large[0]!.path },
    // Pages need a signed-in session in private mode; measured in public mode only.
    { name: 'page: provider', path: '/providers/bench/small', publicOnly: true },
  ];
}

async function seed(runtime: Runtime): Promise<string> {
  await seedSmall(runtime, { hostname: HOSTNAME, namespace: 'bench', type: 'small' }, '1.0.0');
  const newest = await seedLarge(runtime, { hostname: HOSTNAME, namespace: 'bench', type: 'large' }, 1000);
  await seedModules(runtime);
  return newest;
}

/**
 * Loads every production route in public and private mode, each run between
 * two floor runs, `rounds` times; returns one line per (mode, route).
 */
export async function benchProduction(
  bundle: string,
  options: { seconds: number; rounds: number; connections: number; warmUp: boolean; only?: string; log: (message: string) => void },
): Promise<ProductionLine[]> {
  const { log } = options;
  const floor = await startRuntime({ script: FLOOR_SCRIPT });
  const publicRuntime = await startRuntime({ bundlePath: bundle });
  const privateRuntime = await startRuntime({ bundlePath: bundle }, undefined, {
    bindings: { ACCESS: 'private', URL_SIGNING_SECRET: SIGNING_SECRET, INDEX_CACHE_SECONDS: '30' },
  });
  try {
    log('production: seeding the public and the private registry (1 and 1,000 versions × 12 platforms, modules)');
    const newest = await seed(publicRuntime);
    await seed(privateRuntime);
    log('production: seeded');
    const kv = (await privateRuntime.mf.getKVNamespace('REGISTRY_KV')) as unknown as KvStore;
    const { token } = await createToken(kv, { scopes: ['*'], name: 'bench', expires: null });
    const plan = (['public', 'private'] as const).flatMap((mode) =>
      productionRoutes(newest)
        .filter((r) => !(mode === 'private' && r.publicOnly))
        .filter((r) => options.only === undefined || r.name.includes(options.only))
        .map((r) => ({
          mode,
          ...r,
          runtime: mode === 'public' ? publicRuntime : privateRuntime,
          headers: mode === 'private' ? [`Authorization: Bearer ${token}`] : [],
        })),
    );
    const encodings = new Map<string, string | null>();
    for (const item of plan) {
      const response = await fetch(`${item.runtime.origin}${item.path}`, {
        headers: { 'accept-encoding': 'gzip', ...Object.fromEntries(item.headers.map((h) => h.split(': ') as [string, string])) },
      });
      await response.arrayBuffer();
      if (response.status !== 200 && response.status !== 204) throw new Error(`${item.mode} ${item.name}: GET ${item.path} answered ${response.status}`);
      encodings.set(`${item.mode} ${item.name}`, response.headers.get('content-encoding'));
      if (options.warmUp) await wrk(`${item.runtime.origin}${item.path}`, { connections: options.connections, seconds: 1, headers: item.headers });
    }
    const measure = async (runtime: Runtime, path: string, headers: string[]) => {
      const before = cpuMicros(runtime.pid);
      const result = await wrk(`${runtime.origin}${path}`, { connections: options.connections, seconds: options.seconds, headers });
      if (result.non2xx > 0 || result.errors > 0) log(`production ${path}: ${result.non2xx} non-2xx, ${result.errors} socket errors`);
      return { rps: result.rps, cpu: (cpuMicros(runtime.pid) - before) / result.requests };
    };
    const runs = plan.map(() => [] as { rps: number; floorRps: number; cpu: number; floorCpu: number }[]);
    for (let round = 0; round < options.rounds; round++) {
      let before = await measure(floor, '/', []);
      for (const [index, item] of plan.entries()) {
        const r = await measure(item.runtime, item.path, item.headers);
        const after = await measure(floor, '/', []);
        const f = { rps: (before.rps + after.rps) / 2, cpu: (before.cpu + after.cpu) / 2 };
        before = after;
        runs[index]!.push({ rps: r.rps, floorRps: f.rps, cpu: r.cpu, floorCpu: f.cpu });
        log(
          `production ${item.mode} ${item.name}: ${r.rps.toFixed(0)} req/s against the floor's ${f.rps.toFixed(0)} (${(r.rps / f.rps).toFixed(2)}×), ${r.cpu.toFixed(0)} µs CPU/req`,
        );
      }
    }
    return plan.map((item, index) => {
      const r = runs[index]!;
      const ratios = r.map((x) => x.rps / x.floorRps);
      return {
        mode: item.mode,
        name: item.name,
        path: item.path,
        encoding: encodings.get(`${item.mode} ${item.name}`) ?? null,
        rps: median(r.map((x) => x.rps)),
        floorRps: median(r.map((x) => x.floorRps)),
        ratio: median(ratios),
        ratios,
        cpuMicrosPerRequest: median(r.map((x) => x.cpu)),
        floorCpuMicrosPerRequest: median(r.map((x) => x.floorCpu)),
      };
    });
  } finally {
    await privateRuntime.dispose();
    await publicRuntime.dispose();
    await floor.dispose();
  }
}

/** One target per line: req/s ≥ 0.8 × the floor. */
export function productionTargets(lines: ProductionLine[]): Target[] {
  return lines.map((line) => ({
    name: `production (gzip), ${line.mode}: ${line.name}: req/s ÷ floor`,
    value: Number(line.ratio.toFixed(2)),
    target: '≥ 0.8',
    met: line.ratio >= 0.8,
  }));
}

/** The lines as a table. */
export function productionTable(lines: ProductionLine[], rounds: number): string {
  const widths = [8, 26, 9, 8, 8, 10, 9, 7, 6];
  const pad = (cells: (string | number)[]) => cells.map((c, i) => String(c)[i < 2 ? 'padEnd' : 'padStart'](widths[i]!)).join('  ');
  const out = [
    `production settings (GZIP_DOCUMENTS on, Accept-Encoding: gzip; private: a read token): each run between two floor runs, against their mean, median of ${rounds} round(s)`,
    pad(['mode', 'route', 'encoding', 'req/s', 'floor', 'µs CPU', 'floor µs', 'ratio', 'target']),
  ];
  for (const l of lines)
    out.push(
      pad([
        l.mode,
        l.name,
        l.encoding ?? 'identity',
        l.rps.toFixed(0),
        l.floorRps.toFixed(0),
        l.cpuMicrosPerRequest.toFixed(0),
        l.floorCpuMicrosPerRequest.toFixed(0),
        `${l.ratio.toFixed(2)}×`,
        l.ratio >= 0.8 ? 'met' : 'MISSED',
      ]),
    );
  return `${out.join('\n')}\n`;
}

await script(import.meta, 'production', async (work) => {
  const quick = flag('quick');
  const seconds = Number(option('seconds') ?? (quick ? 1 : 3));
  const rounds = Number(option('rounds') ?? (quick ? 1 : 3));
  const only = option('only');
  log('building the Worker (wrangler deploy --dry-run)');
  // --bundle PATH: measure another build (e.g. an earlier commit's, for a before/after).
  const bundle = option('bundle') ?? (await build(work, null));
  const lines = await benchProduction(bundle, { seconds, rounds, connections: 50, warmUp: !quick, log, ...(only ? { only } : {}) });
  process.stdout.write(flag('json') ? `${JSON.stringify(lines)}\n` : productionTable(lines, rounds));
});
