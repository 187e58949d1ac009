/**
 * `npx tsx bench/oci.ts [--rounds=N]`: the Worker's CPU per OCI request (docs/oci.md), beside a /v1/ download
 * document as the baseline: the built Worker in workerd (bench/runtime.ts, in-memory KV and R2), one provider
 * version × 12 platforms (bench/seed.ts), the Worker isolate's busy samples × 100 µs (bench/worker-cpu.ts),
 * median of the rounds. The first manifest request of each round is a new version's (it writes the view).
 */
import { loadavg } from 'node:os';
import { providerAddress } from '../src/protocol/address';
import { freePort } from '../test/e2e/server';
import { build } from './build';
import { startRuntime } from './runtime';
import { HOSTNAME, seedSmall } from './seed';
import { workerProfiler } from './worker-cpu';
import { loadAverages, median, option, script } from './report';

async function main(work: string): Promise<void> {
  const rounds = Number(option('rounds') ?? 5);
  const before = loadavg();
  const inspectorPort = await freePort();
  const runtime = await startRuntime({ bundlePath: await build(work, null) }, undefined, { inspectorPort });
  try {
    const address = providerAddress(HOSTNAME, 'bench', 'oci');
    const versions = Array.from({ length: rounds + 1 }, (_, i) => `1.${i}.0`);
    for (const version of versions) await seedSmall(runtime, address, version);
    const repo = `${runtime.origin}/v2/providers/${HOSTNAME}/bench/oci`;
    // Warm the isolate (module load, first KV reads) on the spare version.
    for (const path of ['/v2/', '/tags/list', `/manifests/${versions.at(-1)}`])
      await fetch(path === '/v2/' ? `${runtime.origin}/v2/` : `${repo}${path}`).then((r) => r.arrayBuffer());
    const profiler = await workerProfiler(inspectorPort, runtime.pid);
    // The requests of each round, in order.
    const names =
      'v1 download document|GET /v2/|tags/list|manifest by tag, first (writes the view)|manifest by tag|manifest by digest|blob (layer, 1 KiB)'.split('|');
    const cpu = new Map<string, number[]>(names.map((n) => [n, []]));
    try {
      for (let round = 0; round < rounds; round++) {
        const version = versions[round]!;
        const { cpu: recording } = await profiler.record(async () => {
          await fetch(`${runtime.origin}/v1/providers/bench/oci/${version}/download/linux/amd64`);
          await fetch(`${runtime.origin}/v2/`);
          await fetch(`${repo}/tags/list`);
          const first = await fetch(`${repo}/manifests/${version}`);
          if (!first.ok) throw new Error(`manifest ${version}: ${first.status}`);
          await fetch(`${repo}/manifests/${version}`, { method: 'HEAD' });
          const index = JSON.parse(await first.text()) as { manifests: { digest: string }[] };
          const manifest = await fetch(`${repo}/manifests/${index.manifests[0]!.digest}`);
          const layer = (JSON.parse(await manifest.text()) as { layers: { digest: string }[] }).layers[0]!;
          await fetch(`${repo}/blobs/${layer.digest}`);
        });
        recording.requests.forEach((r, i) => cpu.get(names[i]!)?.push(r.cpuMs));
      }
    } finally {
      profiler.close();
    }
    console.log(`load average ${loadAverages(before)} → ${loadAverages()}`);
    console.log(`Worker CPU per request (one provider version × 12 platforms; median of ${rounds}, each round's values in brackets):`);
    for (const name of names) {
      const values = cpu.get(name)!;
      console.log(`  ${name.padEnd(42)} ${median(values).toFixed(2)} ms  [${values.map((v) => v.toFixed(1)).join(', ')}]`);
    }
  } finally {
    await runtime.dispose();
  }
}

await script(import.meta, 'oci', main, { inspector: true });
