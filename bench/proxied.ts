/**
 * `npm run bench:pull [-- --quick] [-- --json]` (pull-through) and `npm run bench:modules [-- --json]` (this file
 * with `--modules`, the module proxy): what fetching from an upstream costs the Worker. The Worker (as wrangler
 * builds it, in workerd via Miniflare, every binding call and fetch counted by bench/bench-worker.ts) holds only a
 * policy; a local upstream offers what it proxies:
 *
 * - pull-through: a plain-HTTP upstream with a GnuPG-signed SHA256SUMS and incompressible archives of 50 and
 *   200 MiB (10 and 50 with --quick). A cold pull is VERSION.json, then the archive, then the background commit:
 *   wall time to the client's last byte and to the commit. (The Worker's own CPU per MiB, without the simulators:
 *   `npm run bench:floor`, bench/write-floor.ts.)
 * - the module proxy: modules.v1 and GitHub tarballs made by `git archive` (test/e2e/module-upstream.ts) of a tiny
 *   module, one the size of terraform-aws-modules/vpc (~1 MB of Terraform text in ~200 files) and a large one
 *   (~8 MB in ~1,600 files). A cold download is GET …/download (which proxies the version), then the package; the
 *   Worker's own CPU is measured apart without I/O (unpack, checks, repack, gzip, docs, SHA-256 over the same
 *   tarball, averaged over several runs).
 *
 * Each cold run also gives the whole workerd process's CPU (an upper bound: it also runs Miniflare's KV/R2
 * simulators and the HTTP stack), subrequests (fetch) and KV/R2 operations. Then a warm hit (upstream requests: 0)
 * and 10 simultaneous first requests for one version (upstream downloads: 1).
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { ModuleUpstream } from '../test/e2e/module-upstream';
import { StaticUpstream } from '../test/scripts/mirror/upstream';
import { build } from './build';
import { cpuMicros } from './proc';
import { policyRuntime, processCpuMs, storageCounts, untilCommitted } from './runtime';
import { flag, log, markdownTable, script } from './report';

type Bench = Awaited<ReturnType<typeof policyRuntime>>;
const MiB = 1024 * 1024;

/**
 * `work` run alone: its wall time and workerd's process CPU (ms), the upstream's requests meanwhile, and the bench
 * Worker's counts of it (subrequests, R2 and KV writes and reads, every operation).
 */
async function measured<T>(runtime: Bench, upstream: { requests: readonly string[] }, work: () => Promise<T>) {
  await runtime.ops();
  const [requests, cpu, started] = [upstream.requests.length, cpuMicros(runtime.pid), performance.now()];
  const result = await work();
  const wallMs = Math.round(performance.now() - started);
  const workerdProcessCpuMs = Math.round((cpuMicros(runtime.pid) - cpu) / 1000);
  const ops = await runtime.ops();
  const upstreamRequests = upstream.requests.length - requests;
  return { result, wallMs, workerdProcessCpuMs, upstreamRequests, subrequests: ops['subrequest:fetch'] ?? 0, ...storageCounts(ops), ops };
}

/** `request` made 10 times at once: the answers and the wall time (ms) for all. */
async function simultaneous<T>(request: () => Promise<T>): Promise<{ results: T[]; wallMs: number }> {
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: 10 }, request));
  return { results, wallMs: Math.round(performance.now() - started) };
}

/** Downloads `url`: status, bytes and their SHA-256. */
async function download(url: string | URL, init?: RequestInit) {
  const response = await fetch(url, init);
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    bytes += chunk.byteLength;
  }
  return { status: response.status, bytes, sha256: hash.digest('hex') };
}

async function pullThrough(work: string, bundle: string): Promise<string> {
  const sizes = flag('quick') ? [10, 50] : [50, 200];
  log(`generating ${sizes.join(' and ')} MiB archives`);
  const versions = sizes.map((_, i) => `${i + 1}.0.0`);
  const upstream = await StaticUpstream.start({
    namespace: 'acme',
    type: 'big',
    plainHttp: true,
    releases: [...sizes, sizes[0]!].map((mb, i) => ({ version: versions[i] ?? '9.0.0', platforms: ['linux_amd64'], padding: mb * MiB })),
  });
  const runtime = await policyRuntime(bundle, join(work, 'state'), {
    providers: [{ source: 'upstream.test/acme/big', versions: '>= 1.0.0', platforms: ['linux_amd64'] }],
    hosts: { 'upstream.test': { 'providers.v1': `${upstream.origin}/v1/providers/` } },
  });
  try {
    const base = `${runtime.origin}/v1`;
    const file = (version: string) => `terraform-provider-big_${version}_linux_amd64.zip`;
    const archiveUrl = (version: string) => `${base}/archives/upstream.test/acme/big/${version}/${file(version)}`;
    const upstreamSha = async (version: string) => (await download(`${upstream.origin}/files/${file(version)}`)).sha256;

    const cold = [];
    for (const [i, mb] of sizes.entries()) {
      const version = versions[i]!;
      const expected = await upstreamSha(version);
      const { result, wallMs, ...figures } = await measured(runtime, upstream, async () => {
        const started = performance.now();
        await (await fetch(`${base}/mirror/upstream.test/acme/big/${version}.json`)).arrayBuffer();
        const got = await download(archiveUrl(version));
        const toLastByte = performance.now() - started;
        await untilCommitted(runtime, version);
        return { got, toLastByte };
      });
      if (result.got.status !== 200 || result.got.sha256 !== expected)
        throw new Error(`cold pull of ${version}: HTTP ${result.got.status}, SHA-256 ${result.got.sha256}, expected ${expected}`);
      cold.push({ mb, wallToLastByteMs: Math.round(result.toLastByte), wallToCommitMs: wallMs, ...figures });
      log(`cold ${mb} MiB: ${JSON.stringify(cold.at(-1))}`);
    }

    // Warm: the same archive again, in the same isolate and location.
    const { result: warmGot, ...warmFigures } = await measured(runtime, upstream, () => download(archiveUrl(versions[0]!)));
    const warm = { mb: sizes[0]!, status: warmGot.status, ...warmFigures };
    log(`warm: ${JSON.stringify(warm)}`);

    // 10 simultaneous first requests for one archive.
    await fetch(`${base}/mirror/upstream.test/acme/big/9.0.0.json`).then((r) => r.arrayBuffer());
    const before = upstream.archiveRequestsFor(file('9.0.0'));
    const { results, wallMs } = await simultaneous(() => download(archiveUrl('9.0.0')));
    const expected = await upstreamSha('9.0.0');
    const concurrent = {
      ...{ requests: 10, mb: sizes[0]!, statuses: results.map((r) => r.status), identical: results.every((r) => r.sha256 === expected) },
      ...{ upstreamDownloads: upstream.archiveRequestsFor(file('9.0.0')) - before - 1, wallMs },
    };
    log(`concurrent: ${JSON.stringify(concurrent)}`);
    if (flag('json')) return JSON.stringify({ cold, warm, concurrent });
    return [
      markdownTable(
        [
          'cold pull',
          'wall to last byte (ms)',
          'wall to commit (ms)',
          'workerd process CPU, all (ms)',
          ...['subrequests (fetch)', 'R2 writes', 'R2 reads', 'KV writes', 'KV reads'],
        ],
        cold.map((c) => [
          `${c.mb} MiB`,
          c.wallToLastByteMs,
          c.wallToCommitMs,
          c.workerdProcessCpuMs,
          ...[c.subrequests, c.r2Writes, c.r2Reads, c.kvWrites, c.kvReads],
        ]),
      ),
      '',
      `warm hit (${warm.mb} MiB): HTTP ${warm.status}, ${warm.wallMs} ms, workerd process CPU ${warm.workerdProcessCpuMs} ms, upstream requests ${warm.upstreamRequests}, subrequests ${warm.subrequests}`,
      `10 simultaneous cold requests (${concurrent.mb} MiB): statuses ${[...new Set(concurrent.statuses)].join(',')}, identical bytes: ${concurrent.identical}, upstream downloads: ${concurrent.upstreamDownloads}, ${concurrent.wallMs} ms`,
    ].join('\n');
  } finally {
    await runtime.dispose();
    await upstream.stop();
  }
}

async function moduleProxy(work: string, bundle: string): Promise<string> {
  const NS = 'bench';
  const source = (name: string, version: string) => `git::https://github.com/${NS}/terraform-aws-${name}.git?ref=${name}-v${version}`;
  const sizes = [
    { name: 'tiny', extraFiles: 0 },
    { name: 'vpc', extraFiles: 200 },
    { name: 'large', extraFiles: 1600 },
  ];
  const upstream = await ModuleUpstream.start(
    sizes.map(({ name, extraFiles }) => ({
      namespace: NS,
      name,
      system: 'aws',
      versions: ['1.0.0', '1.1.0'].map((version) => ({ version, source: source(name, version), extraFiles })),
    })),
  );
  const runtime = await policyRuntime(bundle, join(work, 'state'), {
    modules: [{ source: `upstream.test/${NS}/*/aws`, versions: '>= 1.0.0' }],
    hosts: { 'upstream.test': { 'modules.v1': `${upstream.origin}/v1/modules/` }, 'codeload.github.com': { archives: `${upstream.origin}/codeload/` } },
  });
  // The upstream makes each tarball (git archive) on first request: made before the measured downloads.
  const tarball = async (name: string, version: string) =>
    Buffer.from(await (await fetch(`${upstream.origin}/codeload/${NS}/terraform-aws-${name}/tar.gz/${name}-v${version}`)).arrayBuffer());
  try {
    const get = async (name: string, version: string) => {
      const answer = await fetch(`${runtime.origin}/v1/modules/${NS}/${name}/aws/${version}/download`, { redirect: 'manual' });
      const location = answer.headers.get('x-terraform-get');
      if (answer.status !== 204 || !location) throw new Error(`download of ${name} ${version}: HTTP ${answer.status} ${await answer.text()}`);
      const pkg = await download(new URL(location, runtime.origin));
      if (pkg.status !== 200) throw new Error(`package of ${name} ${version}: HTTP ${pkg.status}`);
      return pkg.bytes;
    };
    const cold = [];
    for (const { name, extraFiles } of sizes) {
      // The list first, as Terraform asks it (it remembers the upstream's list in the isolate).
      await (await fetch(`${runtime.origin}/v1/modules/${NS}/${name}/aws/versions`)).arrayBuffer();
      const upstreamTarball = await tarball(name, '1.0.0');
      const { result: packageBytes, ...figures } = await measured(runtime, upstream, () => get(name, '1.0.0'));
      const times = extraFiles > 1000 ? 3 : 10;
      const ownCpuMs = (await processCpuMs(runtime, `/__bench/repack?times=${times}`, { method: 'POST', body: upstreamTarball })) / times;
      cold.push({
        module: name,
        files: extraFiles + 5,
        upstreamTarballBytes: upstreamTarball.length,
        packageBytes,
        ...figures,
        workerOwnCpuMs: Math.round(ownCpuMs * 10) / 10,
      });
      log(`cold ${name}: ${JSON.stringify(cold.at(-1))}`);
    }

    // Warm: the same version again (held: no upstream request).
    const warm = await measured(runtime, upstream, () => get('vpc', '1.0.0'));
    log(`warm: ${JSON.stringify(warm)}`);

    // 10 simultaneous first downloads of one version.
    await tarball('vpc', '1.1.0');
    const fetchesBefore = upstream.count('tar.gz/vpc-v1.1.0');
    const { results, wallMs } = await simultaneous(() => get('vpc', '1.1.0'));
    const concurrent = {
      requests: 10,
      sameSize: new Set(results).size === 1,
      upstreamPackageFetches: upstream.count('tar.gz/vpc-v1.1.0') - fetchesBefore,
      wallMs,
    };
    log(`concurrent: ${JSON.stringify(concurrent)}`);
    if (flag('json')) return JSON.stringify({ cold, warm: { module: 'vpc', ...warm }, concurrent });
    const kb = (bytes: number) => Math.round(bytes / 1024);
    return [
      markdownTable(
        [
          ...['cold proxied download', 'files', 'upstream tarball (KB)', 'our package (KB)', 'wall (ms)', 'workerd process CPU, all (ms)'],
          ...['Worker own CPU (ms)', 'subrequests (fetch)', 'R2 writes', 'R2 reads', 'KV writes', 'KV reads'],
        ],
        cold.map((c) => [
          ...[c.module, c.files, kb(c.upstreamTarballBytes), kb(c.packageBytes), c.wallMs, c.workerdProcessCpuMs],
          ...[c.workerOwnCpuMs, c.subrequests, c.r2Writes, c.r2Reads, c.kvWrites, c.kvReads],
        ]),
      ),
      '',
      `warm download (vpc): ${warm.wallMs} ms, workerd process CPU ${warm.workerdProcessCpuMs} ms, upstream requests ${warm.upstreamRequests}, subrequests ${warm.subrequests}`,
      `10 simultaneous first downloads (vpc 1.1.0): same package for all: ${concurrent.sameSize}, upstream package fetches: ${concurrent.upstreamPackageFetches}, ${concurrent.wallMs} ms`,
    ].join('\n');
  } finally {
    await runtime.dispose();
    await upstream.stop();
  }
}

await script(import.meta, 'proxied', async (work) => {
  log('building the Worker with the bench wrapper');
  const bundle = await build(work, 'bench/bench-worker.ts');
  process.stdout.write(`${await (flag('modules') ? moduleProxy : pullThrough)(work, bundle)}\n`);
});
