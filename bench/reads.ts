/**
 * Storage reads per request in `npm run bench`, counted by the bench Worker (/__bench/ops): every metadata route,
 * page and release file of a published provider (one version × 12 platforms) and the module routes — the first
 * request in a fresh isolate, the same again once the location's edge cache holds the release files, and the first
 * in a fresh isolate of the same location (a new workerd on the same state and cache directory).
 */
import { join } from 'node:path';
import { freePort } from '../test/e2e/server';
import { releaseFilePath } from '../src/store/layout';
import { archiveFilename, shasumsFilename, shasumsSignatureFilename } from '../src/protocol/release-files';
import { opsOf, readsOf, startRuntime, type Runtime } from './runtime';
import { HOSTNAME, MODULE_ROUTES, seedModules, seedSmall } from './seed';

/** KV and R2 reads of a request. */
export type Reads = ReturnType<typeof readsOf>;

export interface RouteReads {
  name: string;
  path: string;
  /** Immutable once published (a release file or a version's document): the location's edge cache keeps it. */
  immutable: boolean;
  /** A release file (served from R2 or the edge cache). */
  file: boolean;
  first: Reads;
  again: Reads;
  freshIsolate: Reads;
}

const provider = { hostname: HOSTNAME, namespace: 'bench', type: 'small' };
const file = (name: string) => releaseFilePath(provider, '1.0.0', name);
const ROUTES: { name: string; path: string; immutable?: boolean; file?: boolean }[] = [
  { name: 'discovery', path: '/.well-known/terraform.json' },
  { name: 'versions', path: '/v1/providers/bench/small/versions' },
  { name: 'download doc', path: '/v1/providers/bench/small/1.0.0/download/linux/amd64', immutable: true },
  { name: 'mirror index', path: `/v1/mirror/${HOSTNAME}/bench/small/index.json` },
  { name: 'mirror version', path: `/v1/mirror/${HOSTNAME}/bench/small/1.0.0.json`, immutable: true },
  { name: 'page: home', path: '/' },
  { name: 'page: provider', path: '/providers/bench/small' },
  { name: 'page: version', path: '/providers/bench/small/1.0.0' },
  ...MODULE_ROUTES.small,
  { name: 'archive', path: file(archiveFilename('small', '1.0.0', { os: 'linux', arch: 'amd64' })), immutable: true, file: true },
  { name: 'SHA256SUMS', path: file(shasumsFilename('small', '1.0.0')), immutable: true, file: true },
  { name: 'SHA256SUMS.sig', path: file(shasumsSignatureFilename('small', '1.0.0')), immutable: true, file: true },
];

/** Each route's reads: first, again, and first in a fresh isolate of the location; `work` is a scratch directory. */
export async function benchReads(benchBundle: string, work: string): Promise<RouteReads[]> {
  // One port for every runtime: the cache's keys are on the request's origin, as on a custom domain.
  const port = await freePort();
  const start = () => startRuntime({ bundlePath: benchBundle }, join(work, 'reads-state'), { persistCache: true, port });
  const readAll = async (runtime: Runtime) => {
    const reads: Reads[] = [];
    for (const route of ROUTES) reads.push(await readsOfGet(runtime, route.path));
    return reads;
  };
  let runtime = await start();
  let first: Reads[];
  let again: Reads[];
  try {
    await seedSmall(runtime, provider, '1.0.0');
    await seedModules(runtime);
    first = await readAll(runtime);
    for (const route of ROUTES) if (route.file) await untilCached(runtime, route.path);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the documents' cache puts (small, already under way)
    again = await readAll(runtime);
  } finally {
    await runtime.dispose();
  }
  runtime = await start();
  try {
    const fresh = await readAll(runtime);
    return ROUTES.map((r, i) => ({ ...r, immutable: !!r.immutable, file: !!r.file, first: first[i]!, again: again[i]!, freshIsolate: fresh[i]! }));
  } finally {
    await runtime.dispose();
  }
}

/** KV and R2 reads of one GET (body read to the end; 200, or 204 for modules.v1 download, whose answer is a header). */
async function readsOfGet(runtime: Runtime, path: string): Promise<Reads> {
  await opsOf(runtime);
  const response = await fetch(`${runtime.origin}${path}`);
  await response.arrayBuffer();
  if (response.status !== 200 && response.status !== 204) throw new Error(`GET ${path} answered ${response.status}`);
  return readsOf(await opsOf(runtime));
}

/** Waits until a HEAD of `path` reads no R2 (the location's cache holds it); HEAD itself never fills the cache. */
async function untilCached(runtime: Runtime, path: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await opsOf(runtime);
    await (await fetch(`${runtime.origin}${path}`, { method: 'HEAD' })).arrayBuffer();
    if (readsOf(await opsOf(runtime)).r2 === 0) return;
    if (Date.now() > deadline) throw new Error(`${path} was not cached within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
