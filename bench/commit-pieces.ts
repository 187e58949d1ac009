/**
 * `npx tsx bench/commit-pieces.ts [--rounds=N]`: the publish commit's own pieces of work, each alone in
 * workerd (bench/bench-worker-floor.ts): N of a piece per request, the Worker's CPU per piece (its isolate's
 * busy samples × 100 µs, bench/worker-cpu.ts) minus an empty request, median of the rounds.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/e2e/server';
import { build } from './build';
import { startRuntime } from './runtime';
import { withWebSocket, workerProfiler } from './worker-cpu';

const KINDS = [
  'openpgp-sign',
  'webcrypto-ed25519-sign',
  'dsse-sign',
  'json-index-1',
  'json-index-200',
  'sort-200-versions',
  'gzip-document',
  'sha256-document',
];
const N = 20;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  await withWebSocket();
  const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice('--rounds='.length) ?? 5);
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-bench-pieces-'));
  const before = loadavg();
  const inspectorPort = await freePort();
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/bench-worker.ts') }, undefined, { inspectorPort });
  try {
    const kinds = ['none', ...KINDS];
    for (const kind of kinds) await fetch(`${runtime.origin}/__bench/piece?kind=${kind}&n=3`).then((r) => r.arrayBuffer());
    const profiler = await workerProfiler(inspectorPort, runtime.pid);
    const cpu = new Map<string, number[]>(kinds.map((k) => [k, []]));
    try {
      for (let round = 0; round < rounds; round++) {
        const { cpu: recording } = await profiler.record(async () => {
          for (const kind of kinds) {
            const response = await fetch(`${runtime.origin}/__bench/piece?kind=${kind}&n=${N}`);
            if (!response.ok) throw new Error(`${kind}: ${response.status}`);
            await response.arrayBuffer();
          }
        });
        recording.requests.forEach((r, i) => cpu.get(kinds[i]!)!.push(r.cpuMs));
      }
    } finally {
      profiler.close();
    }
    const none = median(cpu.get('none')!);
    console.log(
      `load average ${before.map((l) => l.toFixed(1)).join(' ')} → ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log(
      `the commit's pieces alone (bench/bench-worker-floor.ts, ${N} per request, minus an empty request of ${none.toFixed(2)} ms; Worker CPU per piece, median of ${rounds}):`,
    );
    for (const kind of KINDS) {
      const rs = cpu.get(kind)!;
      console.log(`  ${kind.padEnd(24)} ${(Math.max(0, median(rs) - none) / N).toFixed(3)} ms  (per request: ${rs.map((r) => r.toFixed(1)).join(', ')})`);
    }
  } finally {
    await runtime.dispose();
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
