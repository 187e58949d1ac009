/**
 * What it costs to run: Worker requests, KV reads and R2 class-B reads of a real `terraform init` (bench/cost-init.ts)
 * against the Worker built as deployed (in workerd over HTTPS, production settings: gzip documents; private mode with
 * a read token, or public), counted through the bindings by the bench Worker (bench/bench-worker.ts). Per
 * deployment (CostConfig: files through the Worker, from presigned R2 URLs, or metadata and files from the bucket's
 * public custom domain, test/e2e/s3/side.ts) and install path (origin registry, network mirror), three runs: cold
 * (empty edge cache, fresh isolate: the first init in a location), warm edge cache in a fresh isolate (workerd
 * restarted on the same cache: the steady state), and warm edge cache and isolate. From those, the daily `terraform
 * init` capacity that fits Cloudflare's free plan, and the share of it a typical organisation (10 providers, 1,000
 * inits a day, each installing its 10 providers and one module) uses.
 */
import { terraform } from '../test/tools';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createToken } from '../scripts/lib/tokens';
import type { BlobStore, KvStore } from '../src/store/store';
import { freePort, makeCertificate } from '../test/e2e/server';
import { initCounts, startRuntime, type InitCounts } from './runtime';
import { build } from './build';
import { publishState, terraformInit } from './cost-init';
import { flag, log as say, option, script, targetLines, textTable } from './report';
import { startFilesOrigin, startS3 } from '../test/e2e/s3/side';
import { writeAllStaticCopies } from '../src/store/static-documents';
import { markFilesOriginReady } from '../src/store/files-origin-ready';

/** Cloudflare's Workers Free plan (developers.cloudflare.com: Workers, KV and R2 pricing). */
export const FREE_PLAN = { workerRequestsPerDay: 100_000, kvReadsPerDay: 100_000, r2ClassBPerMonth: 10_000_000, r2StorageGb: 10 };
/** The organisation the README's figure is for: each init installs its 10 providers and one module. */
export const TYPICAL = { providers: 10, initsPerDay: 1000 };
/** Storage assumption (our fake archives are a few hundred bytes): a provider version = 6 platforms × 25 MB zips. */
const STORAGE = { platformsPerVersion: 6, archiveMb: 25 };

/**
 * Which deployment an init ran against: ACCESS, and where release files and provider metadata come from (worker:
 * everything through the Worker; r2: RELEASE_FILES=r2, files from presigned R2 URLs; documents: PUBLIC_DOCUMENTS=r2,
 * public only, the providers.v1 and mirror documents and the files from the bucket's public custom domain).
 */
export interface CostConfig {
  access: 'private' | 'public';
  files: 'worker' | 'r2' | 'documents';
}

/** A config's "files" column. */
const filesLabel = (files: CostConfig['files']) => (files === 'documents' ? 'metadata+files R2' : files === 'r2' ? 'from R2' : 'via Worker');

export interface CostScenario extends CostConfig {
  path: 'origin registry' | 'network mirror';
  cache: 'cold' | 'warm edge cache, fresh isolate' | 'warm edge cache and isolate';
  /** Measured, for `providers` providers in one init. */
  measured: InitCounts;
  /** Scaled to TYPICAL.providers per init (measured directly when providers = 10). */
  perTypicalInit: { requests: number; kvReads: number; r2ClassB: number };
  /** The most inits a day the free plan allows at this cost, and which limit binds. */
  freePlanInitsPerDay: number;
  bindingLimit: string;
}

export type CostFigures = Awaited<ReturnType<typeof benchCost>>;

/** Runs the measurement; `{skipped}` with the reason when terraform or openssl is missing. */
export async function benchCost(work: string, options: { quick: boolean; log: (message: string) => void; configs?: CostConfig[] }) {
  const configs = options.configs ?? [
    { access: 'private', files: 'worker' },
    { access: 'public', files: 'worker' },
    { access: 'private', files: 'r2' },
    { access: 'public', files: 'r2' },
    { access: 'public', files: 'documents' },
  ];
  if (!terraform) return { skipped: 'no terraform binary (/usr/local/bin, /usr/bin or PATH)' } as const;
  const started = Date.now();
  const dir = join(work, 'cost');
  await mkdir(dir, { recursive: true });
  const { log } = options;

  log('cost: building the counting Worker');
  const bundlePath = await build(dir, 'bench/bench-worker.ts');

  const providers = options.quick ? 3 : TYPICAL.providers;
  const port = await freePort();
  const hostname = `localhost:${port}`;
  const stateDir = join(dir, 'state');
  log(`cost: publishing ${providers} signed providers and a module`);
  const { platforms } = await publishState(dir, stateDir, hostname, providers);
  const certificate = makeCertificate(dir);

  // RELEASE_FILES=r2: R2's S3 API played by s3rver, behind an HTTPS proxy that counts the clients' requests
  // (class-B reads that never reach the Worker); the release files and packages are copied into it.
  const s3 = configs.some((c) => c.files === 'r2') ? await startS3(dir, certificate) : null;
  // PUBLIC_DOCUMENTS=r2: the bucket's public custom domain, played by an HTTPS server serving the bucket's objects.
  const files = configs.some((c) => c.files === 'documents') ? await startFilesOrigin(certificate) : null;
  // As deployed (wrangler.toml's production environment), on the published state, one edge cache per scenario.
  const start = (cacheDir: string, config: CostConfig) =>
    startRuntime({ bundlePath }, join(stateDir, 'v3'), {
      port,
      cacheDir,
      https: certificate,
      names: { kv: 'edge-registry-local', r2: 'edge-registry' },
      bindings: {
        REGISTRY_HOSTNAME: hostname,
        ACCESS: config.access,
        INDEX_CACHE_SECONDS: '30',
        URL_SIGNING_SECRET: 'bench-cost-signing-secret-0123456789',
        ...(config.files === 'r2' && s3 ? { RELEASE_FILES: 'r2', ...s3.bindings } : {}),
        ...(config.files === 'documents' && files ? { PUBLIC_DOCUMENTS: 'r2', FILES_ORIGIN: files.origin } : {}),
      },
    });

  let token = '';
  const scenarios: CostScenario[] = [];
  try {
    for (const config of configs) {
      for (const path of ['origin registry', 'network mirror'] as const) {
        const label = `${config.access}, files ${filesLabel(config.files)}, ${path}`;
        const cacheDir = join(dir, `cache-${config.access}-${config.files}-${path.replace(' ', '-')}`);
        let runtime = await start(cacheDir, config);
        try {
          const { mf } = runtime;
          const kv = (await mf.getKVNamespace('REGISTRY_KV')) as unknown as KvStore;
          token ||= (await createToken(kv, { scopes: ['*'], name: 'bench', expires: null })).token;
          if (s3 && !s3.copied) await s3.copyFrom((await mf.getR2Bucket('REGISTRY_R2')) as unknown as R2Bucket);
          if (config.files === 'documents' && files && !files.copied) {
            // The state was published without the setting: the backfill writes the static copies, then the domain serves them.
            const store = {
              kv: (await mf.getKVNamespace('REGISTRY_KV')) as unknown as KvStore,
              blobs: (await mf.getR2Bucket('REGISTRY_R2')) as unknown as BlobStore,
            };
            const written = await writeAllStaticCopies(store, { filesOrigin: files.origin });
            await markFilesOriginReady(store.kv, files.origin); // what npm run static-documents writes once its check passed
            log(`cost: ${written} static documents written, ${await files.copyFrom(store.blobs as unknown as R2Bucket)} objects on the files origin`);
          }
          const read = async () =>
            initCounts((await (await runtime.mf.dispatchFetch(`https://${hostname}/__bench/ops?detail&reset`)).json()) as Record<string, number>);
          const reset = async () => void (await Promise.all([read(), s3?.reset(), files?.reset()]));
          await reset();
          const measure = async (cache: CostScenario['cache'], runIndex: number) => {
            await terraformInit(join(dir, 'init', `${config.access}-${config.files}-${path.replace(' ', '-')}-${runIndex}`), {
              hostname,
              providers,
              token: config.access === 'private' ? token : null,
              mirror:
                path === 'network mirror' ? (config.files === 'documents' && files ? `${files.origin}/v1/mirror/` : `https://${hostname}/v1/mirror/`) : null,
              certPath: certificate.certPath,
            });
            const measured = await read();
            const outside = config.files === 'r2' && s3 ? await s3.reset() : config.files === 'documents' && files ? files.reset() : null;
            if (outside) {
              for (const [route, count] of Object.entries(outside)) {
                measured.r2ClassB += count;
                measured.r2ClassBByRoute[route] = (measured.r2ClassBByRoute[route] ?? 0) + count;
              }
            }
            scenarios.push({ ...config, ...scenario(path, cache, measured, providers) });
            log(
              `cost: ${label}, ${cache}: ${measured.requests} Worker requests, ${measured.kvReads} KV reads, ${measured.r2ClassB} R2 reads (${providers} providers)`,
            );
          };
          await measure('cold', 1);
          await runtime.dispose();
          runtime = await start(cacheDir, config); // same edge cache on disk, a new isolate
          await reset();
          await measure('warm edge cache, fresh isolate', 2);
          await measure('warm edge cache and isolate', 3);
        } finally {
          await runtime.dispose();
        }
      }
    }
  } finally {
    await s3?.close();
    await files?.close();
  }

  const steady = (
    scenarios.find((s) => s.access === 'private' && s.files === 'worker' && s.path === 'origin registry' && s.cache === 'warm edge cache, fresh isolate') ??
    scenarios[0]!
  ).perTypicalInit;
  const versionMb = STORAGE.platformsPerVersion * STORAGE.archiveMb;
  const versionsThatFit = Math.floor((FREE_PLAN.r2StorageGb * 1000) / versionMb);
  return {
    providers,
    platforms,
    scenarios,
    typical: {
      ...TYPICAL,
      // The share of each free-plan limit the typical inits use at the steady state (warm edge cache, fresh isolate; private, files through the Worker).
      usage: {
        requests: (steady.requests * TYPICAL.initsPerDay) / FREE_PLAN.workerRequestsPerDay,
        kvReads: (steady.kvReads * TYPICAL.initsPerDay) / FREE_PLAN.kvReadsPerDay,
        r2ClassBPerMonth: (steady.r2ClassB * TYPICAL.initsPerDay * 30) / FREE_PLAN.r2ClassBPerMonth,
      },
      storage: { versionMb, versionsThatFit, perProvider: Math.floor(versionsThatFit / TYPICAL.providers) },
    },
    seconds: (Date.now() - started) / 1000,
  };
}

/** Per-init figures scaled to the typical organisation's provider count, and the free plan's daily capacity at that cost. */
export function scenario(
  path: CostScenario['path'],
  cache: CostScenario['cache'],
  measured: InitCounts,
  providers: number,
): Omit<CostScenario, keyof CostConfig> {
  // Discovery and the module are once per init; everything else is per provider.
  const scale = TYPICAL.providers / providers;
  const scaled = (byRoute: Record<string, number>) =>
    Object.entries(byRoute).reduce((sum, [route, count]) => sum + (/discovery|module/.test(route) ? count : count * scale), 0);
  const perTypicalInit = { requests: scaled(measured.byRoute), kvReads: scaled(measured.kvReadsByRoute), r2ClassB: scaled(measured.r2ClassBByRoute) };
  const limits = [
    { name: 'Worker requests (100k/day)', perDay: FREE_PLAN.workerRequestsPerDay, per: perTypicalInit.requests },
    { name: 'KV reads (100k/day)', perDay: FREE_PLAN.kvReadsPerDay, per: perTypicalInit.kvReads },
    { name: 'R2 class B (10M/month)', perDay: FREE_PLAN.r2ClassBPerMonth / 30, per: perTypicalInit.r2ClassB },
  ].map((l) => ({ ...l, inits: l.per > 0 ? Math.floor(l.perDay / l.per) : Infinity }));
  const binding = limits.reduce((a, b) => (b.inits < a.inits ? b : a));
  return { path, cache, measured, perTypicalInit, freePlanInitsPerDay: binding.inits, bindingLimit: binding.name };
}

/** The table lines for `npm run bench`. */
export function costTable(figures: CostFigures): string[] {
  if ('skipped' in figures) return [`what it costs to run: skipped (${figures.skipped})`];
  const n = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(1));
  const t = figures.typical;
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  return [
    `what it costs to run — real terraform init of ${figures.providers} providers (${figures.platforms.length} platforms each) and 1 module, production settings (gzip documents; private: with a read token), per init${figures.providers === TYPICAL.providers ? '' : ` (provider part scaled to ${TYPICAL.providers} providers)`}:`,
    textTable(
      ['access', 'files', 'install path', 'cache', 'requests', 'KV reads', 'R2 reads', 'free-plan inits/day'],
      figures.scenarios.map((s) => [
        s.access,
        filesLabel(s.files),
        s.path,
        s.cache,
        n(s.perTypicalInit.requests),
        n(s.perTypicalInit.kvReads),
        n(s.perTypicalInit.r2ClassB),
        `${s.freePlanInitsPerDay.toLocaleString('en-US')} (${s.bindingLimit.split(' (')[0]})`,
      ]),
      4,
    ),
    ...figures.scenarios
      .filter((x) => x.cache === 'cold')
      .map((s) => {
        const list = (counts: Record<string, number>, suffix = '') =>
          Object.entries(counts)
            .map(([k, v]) => `${k}${suffix} ${v}`)
            .join(', ');
        return `  ${s.access}, files ${filesLabel(s.files)}, ${s.path}, one cold init of ${figures.providers} providers: requests ${list(s.measured.byRoute)}; KV reads by key ${list(s.measured.kvReadsByKey, '/…')}`;
      }),
    `typical organisation (${t.providers} providers + 1 module per init, ${t.initsPerDay.toLocaleString('en-US')} inits/day, warm edge cache, fresh isolates): ${pct(t.usage.requests)} of the free Worker requests, ${pct(t.usage.kvReads)} of the free KV reads, ${pct(t.usage.r2ClassBPerMonth)} of the free R2 class-B reads`,
    `storage: 10 GB holds ${t.storage.versionsThatFit} provider versions of ${t.storage.versionMb} MB (${STORAGE.platformsPerVersion} platforms × ${STORAGE.archiveMb} MB zips), ${t.storage.perProvider} per provider for ${t.providers} providers`,
  ];
}

/** Bench targets: the typical organisation's steady-state use fits the free plan; a warm edge cache reads nothing from R2. */
export function costTargets(figures: CostFigures): { name: string; value: number; target: string; met: boolean }[] {
  if ('skipped' in figures) return [];
  const t = figures.typical;
  const worst = Math.max(t.usage.requests, t.usage.kvReads, t.usage.r2ClassBPerMonth);
  // Through the Worker only: with files from R2 every client download is an R2 read by design.
  const warmR2 = Math.max(0, ...figures.scenarios.filter((s) => s.cache !== 'cold' && s.files === 'worker').map((s) => s.measured.r2ClassB));
  return [
    {
      name: `${t.providers} providers × ${t.initsPerDay} inits/day: largest share of a free-plan limit`,
      value: Number(worst.toFixed(2)),
      target: '≤ 1',
      met: worst <= 1,
    },
    { name: 'terraform init with a warm edge cache: R2 reads', value: warmR2, target: '0', met: warmR2 === 0 },
    // Issue 38: with files from R2, ≤ 20 Worker requests per init of 10 providers and a module (≥ 5,000 inits a day on Free).
    ...figures.scenarios
      .filter((s) => s.files !== 'worker' && s.cache === 'warm edge cache, fresh isolate')
      .map((s) => ({
        name: `${s.files === 'documents' ? 'metadata and files' : 'files'} from R2, ${s.access}, ${s.path}: free-plan terraform inits/day (10 providers + 1 module)`,
        value: s.freePlanInitsPerDay,
        target: '≥ 5000',
        met: s.freePlanInitsPerDay >= 5000,
      })),
  ];
}

// `npx tsx bench/cost.ts [--quick] [--json] [--only private-worker,public-r2,public-documents,…]` runs only this.
await script(import.meta, 'cost', async (work) => {
  const configs = option('only')
    ?.split(',')
    .map((pair) => {
      const [access, files] = pair.split('-') as [CostConfig['access'], CostConfig['files']];
      return { access, files };
    });
  const figures = await benchCost(work, { quick: flag('quick'), log: say, ...(configs ? { configs } : {}) });
  console.log(flag('json') ? JSON.stringify(figures) : [...costTable(figures), ...targetLines(costTargets(figures))].join('\n'));
});
