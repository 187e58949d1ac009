/**
 * `npm run bench:modules [-- --json]`: what the module proxy costs the
 * Worker. A local upstream registry (test/e2e/module-upstream.ts: modules.v1,
 * and GitHub tarballs made by `git archive`) offers three modules: a tiny
 * one, one the size of terraform-aws-modules/vpc (about 1 MB of Terraform
 * text in ~200 files) and a large one (about 8 MB in ~1,600 files). The
 * Worker (as wrangler builds it, in workerd via Miniflare, every binding
 * call and fetch counted by bench/bench-worker.ts) holds only a policy.
 *
 * Per cold download (GET …/download, which proxies the version, then the
 * package): wall time, the whole workerd process's CPU (an upper bound: it
 * also runs Miniflare's KV/R2 simulators), the Worker's own CPU measured
 * apart without I/O (unpack, checks, repack, gzip, docs, SHA-256 over the
 * same tarball, averaged over several runs), subrequests (fetch) and KV/R2
 * operations. Then a warm download (upstream requests: 0) and 10
 * simultaneous first downloads of one version (upstream package fetches: 1).
 */
import { join } from 'node:path';
import { ModuleUpstream, type UpstreamModule } from '../test/e2e/module-upstream';
import { build } from './build';
import { cpuMicros } from './proc';
import { policyRuntime, storageCounts } from './runtime';
import { flag, log, script } from './report';

await script(import.meta, 'modules', async (work) => {
  const NS = 'bench';
  const source = (name: string, version: string) => `git::https://github.com/${NS}/terraform-aws-${name}.git?ref=${name}-v${version}`;
  const sizes = [
    { name: 'tiny', extraFiles: 0 },
    { name: 'vpc', extraFiles: 200 },
    { name: 'large', extraFiles: 1600 },
  ];
  const modules: UpstreamModule[] = sizes.map(({ name, extraFiles }) => ({
    namespace: NS,
    name,
    system: 'aws',
    versions: ['1.0.0', '1.1.0'].map((version) => ({ version, source: source(name, version), extraFiles })),
  }));
  log('building the Worker');
  const bundle = await build(work, 'bench/bench-worker.ts');
  const upstream = await ModuleUpstream.start(modules);
  const runtime = await policyRuntime(bundle, join(work, 'state'), {
    modules: [{ source: `upstream.test/${NS}/*/aws`, versions: '>= 1.0.0' }],
    hosts: { 'upstream.test': { 'modules.v1': `${upstream.origin}/v1/modules/` }, 'codeload.github.com': { archives: `${upstream.origin}/codeload/` } },
  });
  const { ops } = runtime;
  try {
    const download = async (name: string, version: string) => {
      const answer = await fetch(`${runtime.origin}/v1/modules/${NS}/${name}/aws/${version}/download`, { redirect: 'manual' });
      const location = answer.headers.get('x-terraform-get');
      if (answer.status !== 204 || !location) throw new Error(`download of ${name} ${version}: HTTP ${answer.status} ${await answer.text()}`);
      const pkg = await fetch(new URL(location, runtime.origin));
      const bytes = new Uint8Array(await pkg.arrayBuffer());
      if (pkg.status !== 200) throw new Error(`package of ${name} ${version}: HTTP ${pkg.status}`);
      return bytes.length;
    };

    const cold = [];
    for (const { name, extraFiles } of sizes) {
      // The list first, as Terraform asks it (it remembers the upstream's list in the isolate).
      await (await fetch(`${runtime.origin}/v1/modules/${NS}/${name}/aws/versions`)).arrayBuffer();
      // The upstream makes its tarball (git archive) on first request: made now, outside the measured download.
      const tarball = Buffer.from(await (await fetch(`${upstream.origin}/codeload/${NS}/terraform-aws-${name}/tar.gz/${name}-v1.0.0`)).arrayBuffer());
      await ops();
      const upstreamBefore = upstream.requests.length;
      const cpu0 = cpuMicros(runtime.pid);
      const started = performance.now();
      const packageBytes = await download(name, '1.0.0');
      const wallMs = performance.now() - started;
      const processCpuMs = (cpuMicros(runtime.pid) - cpu0) / 1000;
      const counts = await ops();
      const upstreamRequests = upstream.requests.length - upstreamBefore;
      const times = extraFiles > 1000 ? 3 : 10;
      const before = cpuMicros(runtime.pid);
      const repacked = await fetch(`${runtime.origin}/__bench/repack?times=${times}`, { method: 'POST', body: tarball });
      if (repacked.status !== 200) throw new Error(`/__bench/repack: HTTP ${repacked.status} ${await repacked.text()}`);
      await repacked.arrayBuffer();
      const ownCpuMs = (cpuMicros(runtime.pid) - before) / 1000 / times;
      cold.push({
        module: name,
        files: extraFiles + 5,
        upstreamTarballBytes: tarball.length,
        packageBytes,
        wallMs: Math.round(wallMs),
        workerdProcessCpuMs: Math.round(processCpuMs),
        workerOwnCpuMs: Math.round(ownCpuMs * 10) / 10,
        subrequests: counts['subrequest:fetch'] ?? 0,
        upstreamRequests,
        ...storageCounts(counts),
        ops: counts,
      });
      log(`cold ${name}: ${JSON.stringify(cold.at(-1))}`);
    }

    // Warm: the same version again (held: no upstream request).
    await ops();
    const upstreamBefore = upstream.requests.length;
    const warmCpu0 = cpuMicros(runtime.pid);
    const warmStarted = performance.now();
    await download('vpc', '1.0.0');
    const warm = {
      module: 'vpc',
      wallMs: Math.round(performance.now() - warmStarted),
      workerdProcessCpuMs: Math.round((cpuMicros(runtime.pid) - warmCpu0) / 1000),
      upstreamRequests: upstream.requests.length - upstreamBefore,
      subrequests: (await ops())['subrequest:fetch'] ?? 0,
    };
    log(`warm: ${JSON.stringify(warm)}`);

    // 10 simultaneous first downloads of one version.
    await (await fetch(`${upstream.origin}/codeload/${NS}/terraform-aws-vpc/tar.gz/vpc-v1.1.0`)).arrayBuffer();
    const fetchesBefore = upstream.count('tar.gz/vpc-v1.1.0');
    const concurrentStarted = performance.now();
    const results = await Promise.all(Array.from({ length: 10 }, () => download('vpc', '1.1.0')));
    const concurrent = {
      requests: 10,
      sameSize: new Set(results).size === 1,
      upstreamPackageFetches: upstream.count('tar.gz/vpc-v1.1.0') - fetchesBefore,
      wallMs: Math.round(performance.now() - concurrentStarted),
    };
    log(`concurrent: ${JSON.stringify(concurrent)}`);

    const figures = { cold, warm, concurrent };
    if (flag('json')) {
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    } else {
      process.stdout.write(
        [
          '| cold proxied download | files | upstream tarball (KB) | our package (KB) | wall (ms) | workerd process CPU, all (ms) | Worker own CPU (ms) | subrequests (fetch) | R2 writes | R2 reads | KV writes | KV reads |',
          '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
          ...cold.map(
            (c) =>
              `| ${c.module} | ${c.files} | ${Math.round(c.upstreamTarballBytes / 1024)} | ${Math.round(c.packageBytes / 1024)} | ${c.wallMs} | ${c.workerdProcessCpuMs} | ${c.workerOwnCpuMs} | ${c.subrequests} | ${c.r2Writes} | ${c.r2Reads} | ${c.kvWrites} | ${c.kvReads} |`,
          ),
          '',
          `warm download (vpc): ${warm.wallMs} ms, workerd process CPU ${warm.workerdProcessCpuMs} ms, upstream requests ${warm.upstreamRequests}, subrequests ${warm.subrequests}`,
          `10 simultaneous first downloads (vpc 1.1.0): same package for all: ${concurrent.sameSize}, upstream package fetches: ${concurrent.upstreamPackageFetches}, ${concurrent.wallMs} ms`,
          '',
        ].join('\n'),
      );
    }
  } finally {
    await runtime.dispose();
    await upstream.stop();
  }
});
