/**
 * `npm run bench:pull [-- --quick] [-- --json]`: what pull-through costs the
 * Worker. A local upstream (plain HTTP, GnuPG-signed SHA256SUMS) offers
 * incompressible archives of 50 MB and 200 MB (10 and 50 with --quick); the
 * Worker (as wrangler builds it, in workerd via Miniflare, every binding
 * call and fetch counted by bench/bench-worker.ts) holds only a policy.
 *
 * Per cold pull (VERSION.json, then the archive, then the background commit):
 * wall time to the client's last byte and to the commit, the whole workerd
 * process's CPU (an upper bound: it also runs Miniflare's KV/R2 simulators
 * and the HTTP stack), the Worker's own CPU measured apart without I/O (the
 * verified copy over as many bytes, plus h1 from R2 minus a plain read of
 * the object), subrequests (fetch) and KV/R2 operations. Then a warm
 * hit (upstream requests: 0) and 10 simultaneous cold requests for one
 * archive (upstream downloads: 1).
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { StaticUpstream } from '../test/scripts/mirror/upstream';
import { build } from './build';
import { cpuMicros } from './proc';
import { policyRuntime, storageCounts } from './runtime';
import { discardServer } from './write-floor';
import { flag, log, script } from './report';

await script(import.meta, 'pull', async (work) => {
  const MiB = 1024 * 1024;
  const sizes = flag('quick') ? [10, 50] : [50, 200];
  log(`building the Worker; generating ${sizes.join(' and ')} MiB archives`);
  const bundle = await build(work, 'bench/bench-worker.ts');
  const versions = sizes.map((_, i) => `${i + 1}.0.0`);
  const upstream = await StaticUpstream.start({
    namespace: 'acme',
    type: 'big',
    plainHttp: true,
    releases: [
      ...sizes.map((mb, i) => ({ version: versions[i]!, platforms: ['linux_amd64'], padding: mb * MiB })),
      { version: '9.0.0', platforms: ['linux_amd64'], padding: sizes[0]! * MiB },
    ],
  });
  const runtime = await policyRuntime(bundle, join(work, 'state'), {
    providers: [{ source: 'upstream.test/acme/big', versions: '>= 1.0.0', platforms: ['linux_amd64'] }],
    hosts: { 'upstream.test': { 'providers.v1': `${upstream.origin}/v1/providers/` } },
  });
  const { ops } = runtime;
  const sink = await discardServer();
  try {
    const r2 = await runtime.mf.getR2Bucket('REGISTRY_R2');
    const base = `${runtime.origin}/v1`;
    const file = (version: string) => `terraform-provider-big_${version}_linux_amd64.zip`;
    const archiveUrl = (version: string) => `${base}/archives/upstream.test/acme/big/${version}/${file(version)}`;
    const download = async (url: string) => {
      const response = await fetch(url);
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        hash.update(chunk);
        bytes += chunk.byteLength;
      }
      return { status: response.status, bytes, sha256: hash.digest('hex') };
    };
    const committed = async (version: string) => {
      for (let i = 0; i < 600; i++) {
        if (await r2.head(`.records/upstream.test/acme/big/${version}.json`)) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`${version} was never committed`);
    };
    const upstreamSha = async (version: string) =>
      createHash('sha256')
        .update(Buffer.from(await (await fetch(`${upstream.origin}/files/${file(version)}`)).arrayBuffer()))
        .digest('hex');

    const cold = [];
    for (const [i, mb] of sizes.entries()) {
      const version = versions[i]!;
      const expected = await upstreamSha(version);
      await ops();
      const upstreamBefore = upstream.requests.length;
      const cpu0 = cpuMicros(runtime.pid);
      const started = performance.now();
      const document = await fetch(`${base}/mirror/upstream.test/acme/big/${version}.json`);
      await document.arrayBuffer();
      const got = await download(archiveUrl(version));
      const toLastByte = performance.now() - started;
      await committed(version);
      const toCommit = performance.now() - started;
      const processCpuMs = (cpuMicros(runtime.pid) - cpu0) / 1000;
      const counts = await ops();
      if (got.status !== 200 || got.sha256 !== expected)
        throw new Error(`cold pull of ${version}: HTTP ${got.status}, SHA-256 ${got.sha256}, expected ${expected}`);
      // The Worker's own share, measured without I/O: the verified copy over as many bytes, and h1 minus a plain read.
      const key = `upstream.test/acme/big/${version}/${file(version)}`;
      const measure = async (query: string) => {
        const before = cpuMicros(runtime.pid);
        const response = await fetch(`${runtime.origin}/__bench/cpu?${query}`);
        if (response.status !== 200) throw new Error(`/__bench/cpu?${query}: HTTP ${response.status} ${await response.text()}`);
        await response.arrayBuffer();
        return (cpuMicros(runtime.pid) - before) / 1000;
      };
      const copyMs = await measure(`what=copy&mb=${mb}&sink=${encodeURIComponent(sink.url)}`);
      const h1Ms = await measure(`what=h1&key=${encodeURIComponent(key)}`);
      const readMs = await measure(`what=read&key=${encodeURIComponent(key)}`);
      cold.push({
        mb,
        wallToLastByteMs: Math.round(toLastByte),
        wallToCommitMs: Math.round(toCommit),
        workerdProcessCpuMs: Math.round(processCpuMs),
        workerOwnCpuMs: Math.round(copyMs + Math.max(0, h1Ms - readMs)),
        copyCpuMs: Math.round(copyMs),
        h1CpuMs: Math.round(h1Ms),
        plainReadCpuMs: Math.round(readMs),
        subrequests: counts['subrequest:fetch'] ?? 0,
        upstreamRequests: upstream.requests.length - upstreamBefore,
        ...storageCounts(counts),
        ops: counts,
      });
      log(`cold ${mb} MiB: ${JSON.stringify(cold.at(-1))}`);
    }

    // Warm: the same archive again, in the same isolate and location.
    const version = versions[0]!;
    await ops();
    const upstreamBefore = upstream.requests.length;
    const warmCpu0 = cpuMicros(runtime.pid);
    const warmStarted = performance.now();
    const warm = await download(archiveUrl(version));
    const warmWall = performance.now() - warmStarted;
    const warmCounts = await ops();
    const warmFigures = {
      mb: sizes[0]!,
      status: warm.status,
      wallMs: Math.round(warmWall),
      workerdProcessCpuMs: Math.round((cpuMicros(runtime.pid) - warmCpu0) / 1000),
      upstreamRequests: upstream.requests.length - upstreamBefore,
      subrequests: warmCounts['subrequest:fetch'] ?? 0,
      ops: warmCounts,
    };
    log(`warm: ${JSON.stringify(warmFigures)}`);

    // 10 simultaneous first requests for one archive.
    const concurrentVersion = '9.0.0';
    await fetch(`${base}/mirror/upstream.test/acme/big/${concurrentVersion}.json`).then((r) => r.arrayBuffer());
    const beforeArchives = upstream.archiveRequestsFor(file(concurrentVersion));
    const concurrentStarted = performance.now();
    const results = await Promise.all(Array.from({ length: 10 }, () => download(archiveUrl(concurrentVersion))));
    const concurrentWall = performance.now() - concurrentStarted;
    const expected = await upstreamSha(concurrentVersion);
    const concurrent = {
      requests: 10,
      mb: sizes[0]!,
      statuses: results.map((r) => r.status),
      identical: results.every((r) => r.sha256 === expected),
      upstreamDownloads: upstream.archiveRequestsFor(file(concurrentVersion)) - beforeArchives - 1,
      wallMs: Math.round(concurrentWall),
    };
    log(`concurrent: ${JSON.stringify(concurrent)}`);

    const figures = { cold, warm: warmFigures, concurrent };
    if (flag('json')) {
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    } else {
      const rows = cold.map(
        (c) =>
          `| ${c.mb} MiB | ${c.wallToLastByteMs} | ${c.wallToCommitMs} | ${c.workerdProcessCpuMs} | ${c.workerOwnCpuMs} (${c.copyCpuMs} + ${c.h1CpuMs} − ${c.plainReadCpuMs}) | ${c.subrequests} | ${c.r2Writes} | ${c.r2Reads} | ${c.kvWrites} | ${c.kvReads} |`,
      );
      process.stdout.write(
        [
          '| cold pull | wall to last byte (ms) | wall to commit (ms) | workerd process CPU, all (ms) | Worker own CPU: copy + (h1 − read) (ms) | subrequests (fetch) | R2 writes | R2 reads | KV writes | KV reads |',
          '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
          ...rows,
          '',
          `warm hit (${warmFigures.mb} MiB): HTTP ${warmFigures.status}, ${warmFigures.wallMs} ms, workerd process CPU ${warmFigures.workerdProcessCpuMs} ms, upstream requests ${warmFigures.upstreamRequests}, subrequests ${warmFigures.subrequests}`,
          `10 simultaneous cold requests (${concurrent.mb} MiB): statuses ${[...new Set(concurrent.statuses)].join(',')}, identical bytes: ${concurrent.identical}, upstream downloads: ${concurrent.upstreamDownloads}, ${concurrent.wallMs} ms`,
          '',
        ].join('\n'),
      );
    }
  } finally {
    await runtime.dispose();
    await sink.close();
    await upstream.stop();
  }
});
