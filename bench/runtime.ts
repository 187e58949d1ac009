import { compatibilityDate } from '../scripts/lib/config';
import { dirname } from 'node:path';
import { freePort, startDevServer, type DevServer } from '../test/e2e/server';
import { Miniflare } from 'miniflare';
import { formatPolicy, parsePolicy } from '../src/protocol/mirror-policy';
import { mirrorPolicyKey } from '../src/store/layout';
import { childPids, cpuNanos } from './proc';

/**
 * workerd through Miniflare's API, serving a built Worker directly on
 * 127.0.0.1 (no wrangler dev proxy in front), with in-memory KV and R2 bound as in wrangler.toml.
 */
export interface Runtime {
  mf: Miniflare;
  /** e.g. http://127.0.0.1:PORT (no trailing slash). */
  origin: string;
  /** The workerd process serving it. */
  pid: number;
  dispose(): Promise<void>;
}

export const VARS = {
  REGISTRY_HOSTNAME: 'registry.example.com',
  ACCESS: 'public',
  INDEX_CACHE_SECONDS: '5',
  ARCHIVE_BASE_URL: '',
  // As deployed (wrangler.toml's production environment).
  GZIP_DOCUMENTS: 'true',
};
const COMPATIBILITY_DATE = compatibilityDate(); // wrangler.toml's

/**
 * `persistDir` stores KV and R2 on disk as `wrangler dev` does (R2 blobs are files, so serving one streams from
 * disk); without it they live in memory. `persistCache` keeps the edge cache (Cache API) there as well; its entries
 * are keyed on the request's origin, so a later runtime that should find them listens on the same `port` (`cacheDir`:
 * the cache in that directory instead). `downloads` binds the DOWNLOADS Durable Object (download counts) with that
 * batch window. `https` serves with that key and certificate; `names` are the KV namespace's and the bucket's ids (a
 * local state's: edge-registry-local and edge-registry).
 */
export async function startRuntime(
  worker: { bundlePath: string } | { script: string },
  persistDir?: string,
  options: {
    persistCache?: boolean;
    cacheDir?: string;
    port?: number;
    inspectorPort?: number;
    downloads?: { batchMs: number };
    bindings?: Record<string, string>;
    https?: { keyPath: string; certPath: string };
    names?: { kv: string; r2: string };
  } = {},
): Promise<Runtime> {
  const before = new Set(childPids('workerd'));
  const source =
    'bundlePath' in worker
      ? { modules: [{ type: 'ESModule' as const, path: worker.bundlePath }], modulesRoot: dirname(worker.bundlePath) }
      : { modules: true, script: worker.script };
  const mf = new Miniflare({
    ...source,
    compatibilityDate: COMPATIBILITY_DATE,
    host: '127.0.0.1',
    port: options.port ?? 0,
    bindings: { ...VARS, ...(options.downloads ? { DOWNLOAD_BATCH_MS: String(options.downloads.batchMs) } : {}), ...options.bindings },
    // Download counts (wrangler.toml's DOWNLOADS): the bundle must export DownloadCounter.
    ...(options.downloads ? { durableObjects: { DOWNLOADS: { className: 'DownloadCounter', useSQLite: true } } } : {}),
    ...(options.https ? { https: true, httpsKeyPath: options.https.keyPath, httpsCertPath: options.https.certPath } : {}),
    kvNamespaces: { REGISTRY_KV: options.names?.kv ?? 'bench-kv' },
    r2Buckets: { REGISTRY_R2: options.names?.r2 ?? 'bench-r2' },
    // workerd logs a broken pipe for every connection wrk drops at the end of a run; keep the table readable.
    handleRuntimeStdio(stdout, stderr) {
      stdout.resume();
      stderr.resume();
    },
    ...(persistDir ? { defaultPersistRoot: persistDir, kvPersist: true, r2Persist: true } : {}),
    // The Cache API's store on disk too: a later workerd on the same directory is another isolate of the same location.
    ...(options.cacheDir ? { cachePersist: options.cacheDir } : persistDir && options.persistCache ? { cachePersist: true } : {}),
    ...(options.inspectorPort ? { inspectorPort: options.inspectorPort } : {}),
  });
  const url = await mf.ready;
  const pid = childPids('workerd').find((p) => !before.has(p));
  if (pid === undefined) throw new Error('could not find the workerd process Miniflare started');
  return { mf, origin: url.origin, pid, dispose: () => mf.dispose() };
}

/**
 * The bench Worker's `bundle` (bench/bench-worker.ts) on a state in `dir` holding only a pull-through `policy`
 * (src/protocol/mirror-policy.ts's JSON), with `ops()`: its binding calls and fetches by "binding:method" since the
 * last call.
 */
export async function policyRuntime(
  bundle: string,
  dir: string,
  policy: object,
  options: { inspectorPort?: number } = {},
): Promise<Runtime & { ops(): Promise<Record<string, number>> }> {
  const runtime = await startRuntime({ bundlePath: bundle }, dir, options);
  await (await runtime.mf.getKVNamespace('REGISTRY_KV')).put(mirrorPolicyKey, formatPolicy(parsePolicy(JSON.stringify(policy), 'bench policy')));
  return { ...runtime, ops: () => opsOf(runtime) };
}

/** workerd's process CPU (ms, every thread's schedstat) of one request to `runtime`, answered 200 (else throws). */
export async function processCpuMs(runtime: Runtime, path: string, init?: RequestInit): Promise<number> {
  const before = cpuNanos(runtime.pid);
  const response = await fetch(`${runtime.origin}${path}`, init);
  const text = await response.text();
  const ms = (cpuNanos(runtime.pid) - before) / 1e6;
  if (response.status !== 200) throw new Error(`${path}: HTTP ${response.status} ${text.slice(0, 300)}`);
  return ms;
}

/** One request's workerd process CPU (ms), the least of three (the machine is shared; the bench Worker's paths make no storage I/O). */
export async function leastCpuMs(runtime: Runtime, url: string, init?: RequestInit): Promise<number> {
  let least = Infinity;
  for (let i = 0; i < 3; i++) least = Math.min(least, await processCpuMs(runtime, url, init));
  return least;
}

/** Waits (up to 2 minutes) until the pulled version `version` of upstream.test/acme/big is committed (its record in R2). */
export async function untilCommitted(runtime: Runtime, version: string): Promise<void> {
  const r2 = await runtime.mf.getR2Bucket('REGISTRY_R2');
  for (let i = 0; i < 1200; i++) {
    if (await r2.head(`.records/upstream.test/acme/big/${version}.json`)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the pulled version ${version} was never committed`);
}

/** The bench Worker's counts since the last call (/__bench/ops?reset, bench/bench-worker.ts), by "binding:method". */
export async function opsOf(runtime: Runtime): Promise<Record<string, number>> {
  return (await (await fetch(`${runtime.origin}/__bench/ops?reset`)).json()) as Record<string, number>;
}

/** KV reads (get, getWithMetadata) and R2 reads (get, head) among `counts`. */
export const readsOf = (counts: Record<string, number>) => ({ kv: countOf(counts, /^kv:get/), r2: countOf(counts, /^r2:(get|head)$/) });

/** The sum of `counts` whose "binding:method" matches `pattern`. */
export const countOf = (counts: Record<string, number>, pattern: RegExp): number =>
  Object.entries(counts).reduce((sum, [key, n]) => sum + (pattern.test(key) ? n : 0), 0);

/** R2 and KV writes and reads among `counts` (lists are reads, deletes and multipart creations writes). */
export const storageCounts = (counts: Record<string, number>) => ({
  r2Writes: countOf(counts, /^r2:(put|delete|createMultipartUpload)/),
  r2Reads: countOf(counts, /^r2:(get|head|list)/),
  kvWrites: countOf(counts, /^kv:(put|delete)/),
  kvReads: countOf(counts, /^kv:(get|list)/),
});

/** An init's counts: totals, and by "METHOD route" (KV reads also by the key's first segment). */
export interface InitCounts {
  requests: number;
  kvReads: number;
  r2ClassB: number;
  byRoute: Record<string, number>;
  kvReadsByKey: Record<string, number>;
  kvReadsByRoute: Record<string, number>;
  r2ClassBByRoute: Record<string, number>;
}

/** The bench Worker's detailed counts (/__bench/ops?detail, "binding:method|kind|segment") as Cloudflare bills them. */
export function initCounts(detail: Record<string, number>): InitCounts {
  const counts: InitCounts = { requests: 0, kvReads: 0, r2ClassB: 0, byRoute: {}, kvReadsByKey: {}, kvReadsByRoute: {}, r2ClassBByRoute: {} };
  const add = (by: Record<string, number>, key: string, n: number) => void (by[key] = (by[key] ?? 0) + n);
  for (const [key, n] of Object.entries(detail)) {
    const [op, kind, segment] = key.split('|') as [string, string, string];
    if (op === 'worker:request') {
      counts.requests += n;
      add(counts.byRoute, kind, n);
    } else if (/^kv:get/.test(op)) {
      counts.kvReads += n;
      add(counts.kvReadsByRoute, kind, n);
      add(counts.kvReadsByKey, segment, n);
    } else if (/^r2:(get|head)$/.test(op)) {
      counts.r2ClassB += n;
      add(counts.r2ClassBByRoute, kind, n);
    }
  }
  return counts;
}

/**
 * Exactly what `npm start -- ARGS` runs (package.json: node scripts/run.mjs start: wrangler dev) on a free port and
 * `state`, in its own process group (stopped with it; test/e2e/server.ts); resolves once discovery answers 200.
 * `log()`: its output.
 */
export async function startNpmStart(state: string): Promise<DevServer> {
  return startDevServer({ stateDir: state, port: await freePort(), npmStart: true });
}
