/**
 * `npm run bench -- --soak [MINUTES]` (default 10): memory under sustained load. 50 wrk connections for MINUTES
 * against the built Worker in workerd (the bench's counting wrapper around the same Worker), each request a random
 * pick among every document and some release files of a provider whose documents add up to well over the isolate
 * cache's 32 MiB, so the cache is kept full and evicting all along. Every few seconds it samples workerd's RSS and
 * the cache's own figures (/__bench/cache), then prints the RSS curve, whether it plateaus after the warm-up, and
 * whether the cache's byte bound held at every sample, and the Worker's answers per route and status with the
 * requests it never answered (/__bench/statuses). Reported, never a failure. Miniflare's own isolates collect their
 * garbage every HELPER_COLLECTION_SECONDS (SoakOptions.rawHelpers says why); after the load every isolate does, and
 * the RSS left is reported.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeRelease } from '../test/fixtures/release';
import { publishVersion, rebuildProviderIndex } from '../src/store/providers/write';
import { downloadDocumentKey, releaseFilePath } from '../src/store/layout';
import type { ProviderAddress } from '../src/protocol/address';
import { build } from './build';
import { connectHeaps } from './inspector';
import { cpuMicros, rssBytes } from './proc';
import { startRuntime, type Runtime } from './runtime';
import { HOSTNAME, PLATFORMS, stores } from './seed';
import { wrk, type LoadResult } from './wrk';
import { analyse, report, type RouteFigures, type SoakResult, type SoakSample } from './soak-report';
import { freePort } from '../test/e2e/server';

const CONNECTIONS = 50;
const VERSIONS = 300;
const ARCHIVE_BYTES = 256 * 1024;
// A real RSA-4096 public key in ASCII armor is ~3 KB; every download document carries one.
const ARMOR = `-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n${'A'.repeat(3000).replace(/(.{64})/g, '$1\n')}\n-----END PGP PUBLIC KEY BLOCK-----\n`;

/** GET `path` of the bench Worker as JSON, tried `tries` times (the load keeps workerd busy); null when it never answered. */
async function benchJson<T>(origin: string, path: string, tries = 1): Promise<T | null> {
  for (let attempt = 0; attempt < tries; attempt++) {
    try {
      return (await (await fetch(`${origin}${path}`, { signal: AbortSignal.timeout(10_000) })).json()) as T;
    } catch {
      // not answered: try again
    }
  }
  return null;
}

const log = (message: string) => process.stderr.write(`bench soak: ${message}\n`);

export interface SoakOptions {
  /** Load only the documents of the first 40 versions, which fit in the isolate cache (no KV read after the warm-up): growth on the KV path told apart. */
  cachedOnly?: boolean;
  /**
   * Leave Miniflare's own isolates (entry worker, KV, R2 and Cache API simulators) to V8 alone. By default they
   * collect their garbage every HELPER_COLLECTION_SECONDS: each holds native memory V8 does not see, so their small
   * heaps are seldom collected and it piles up in workerd, a growth no deployed Worker has (bench/README.md). The
   * Worker's own isolate is never collected by the soak.
   */
  rawHelpers?: boolean;
}

/** How often Miniflare's own isolates collect their garbage during the soak (unless rawHelpers). */
const HELPER_COLLECTION_SECONDS = 10;

/** Runs the soak for `minutes` and prints its report (or, with `json`, one JSON object). */
export async function soak(minutes: number, json: boolean, options: SoakOptions = {}): Promise<SoakResult> {
  const { cachedOnly = false } = options;
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-soak-'));
  try {
    log('building the Worker with the bench wrapper (wrangler deploy --dry-run)');
    const bundle = await build(work, 'bench/bench-worker.ts');
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
      const started = Date.now();
      const sample = async () => {
        const seconds = (Date.now() - started) / 1000;
        const rssMb = rssBytes(runtime.pid) / 1024 / 1024;
        const cpuSeconds = cpuMicros(runtime.pid) / 1e6;
        const heap = heaps ? await heaps.sample().catch(() => null) : null;
        const cache = await benchJson<NonNullable<SoakSample['cache']>>(runtime.origin, '/__bench/cache', 3);
        samples.push({ seconds, rssMb, cpuSeconds, cache, heap });
        if (samples.length % Math.max(1, Math.round(60 / interval)) === 1) {
          log(
            `${seconds.toFixed(0)} s: RSS ${rssMb.toFixed(1)} MB, Worker heap ${heap ? heap.workerTotalMb.toFixed(1) : '?'} MB, cache ${cache ? `${(cache.bytes / 1024 / 1024).toFixed(1)} MB in ${cache.entries} entries, ${cache.evictions} evictions` : 'not read'}`,
          );
        }
      };
      await sample();
      let collections = 0;
      // Miniflare's own isolates (see SoakOptions.rawHelpers); never the Worker's, whose heap is left to V8.
      const collector =
        heaps && !options.rawHelpers
          ? every(HELPER_COLLECTION_SECONDS, 'collection', async () => {
              await heaps!.collectGarbage('others');
              collections++;
            })
          : null;
      const sampler = every(interval, 'sample', sample);
      let load: LoadResult;
      try {
        load = await wrk(`${runtime.origin}/`, { connections: CONNECTIONS, seconds: Math.round(minutes * 60), script });
      } finally {
        await sampler.stop();
        await collector?.stop();
      }
      await sample();
      // What is left once every isolate has collected its garbage: live memory, not garbage V8 has yet to collect.
      let collected: SoakResult['afterCollection'] = null;
      if (heaps) {
        try {
          await heaps.collectGarbage();
          collected = { rssMb: rssBytes(runtime.pid) / 1024 / 1024, heap: await heaps.sample() };
          log(`after a full collection in every isolate: RSS ${collected.rssMb.toFixed(1)} MB`);
        } catch (error) {
          log(`full collection failed: ${String(error)}`);
        }
      }
      // After a pause, so requests wrk gave up on have had time to finish (or be found hung).
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      const routes = await benchJson<RouteFigures>(runtime.origin, '/__bench/statuses');
      const result: SoakResult = analyse(CONNECTIONS, minutes, paths.length, storedBytes, load, samples);
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

/**
 * Publishes VERSIONS versions through the store's write path: every version's download and mirror documents (no
 * files), one version with its release files, then the lists. Returns every path the load picks from.
 */
async function seed(runtime: Runtime, address: ProviderAddress): Promise<{ paths: string[]; storedBytes: number }> {
  const store = await stores(runtime);
  const versions = Array.from({ length: VERSIONS }, (_, i) => `${Math.floor(i / 100) + 1}.${i % 100}.0`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < versions.length) {
        const version = versions[next++]!;
        const full = version === versions[0];
        const release = fakeRelease(address, version, PLATFORMS, { archiveSize: full ? ARCHIVE_BYTES : 64 });
        release.record.signingKey = { key_id: '0123456789ABCDEF', ascii_armor: ARMOR };
        await publishVersion(store, release.record, full ? release.files : [], () => {}, { rebuildIndex: false });
      }
    }),
  );
  await rebuildProviderIndex(store, address, () => {});

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
  const sample = await store.kv.get(downloadDocumentKey(address, versions[1]!, { os: 'linux', arch: 'amd64' }), 'text');
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

/**
 * Runs `work` every `seconds` until stopped. A tick that comes while the previous run is still going (a busy workerd
 * answers slowly) is skipped, never queued: queued samples would all be read at once after the load, as rows that
 * never happened. A failure is logged; `stop()` waits for the run under way.
 */
function every(seconds: number, what: string, work: () => Promise<void>): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    running ??= work()
      .catch((error: unknown) => void log(`${what} failed: ${String(error)}`))
      .finally(() => (running = null));
  }, seconds * 1000);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
