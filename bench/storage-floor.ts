/**
 * The floor of a storage operation: the Worker CPU one KV or R2 call on a small JSON document takes in this
 * workerd (Miniflare's simulators), with CPU attributed to the Worker isolate as bench/worker-cpu.ts does for the
 * publish API. The bench Worker (bench/bench-worker-floor.ts) runs N operations of one kind per request; per
 * operation = (request − an empty request) ÷ N, the median of `rounds` interleaved rounds. `--pieces`: the same
 * for the publish commit's own pieces of work (PIECES: signatures, JSON, sorting, gzip, 1 MiB in memory into a
 * DigestStream three ways), each alone.
 *
 * `npx tsx bench/storage-floor.ts [--rounds=N] [--pieces] [--json]`; bench/publish-api.ts
 * runs it in the same run as the publish to set the commit's storage requests against it.
 */
import { loadavg } from 'node:os';
import { freePort } from '../test/e2e/server';
import { build } from './build';
import { COMMIT_REQUESTS } from '../test/fixtures/commit-requests';
import { startRuntime } from './runtime';
import { workerProfiler } from './worker-cpu';
import { flag, loadAverages, median, option, script } from './report';
import { pieces, spin, storageOps } from './bench-worker-floor';

/** The storage operations measured by default, and the publish commit's pieces of work measured alone (`--pieces`). */
export const STORAGE_OPS = Object.keys(storageOps);
export const PIECES = Object.keys(pieces);

export interface StorageFloor {
  /** Operations per request. */
  n: number;
  /** The empty request's Worker CPU (median, ms). */
  requestMs: number;
  /** Per kind: Worker CPU per operation (median, ms). */
  perOp: { kind: string; cpuMs: number }[];
  /** One request making only `mix`'s storage requests (the publish commit's, when given): Worker CPU per request (median; every round). */
  mix?: { requests: number; cpuMs: number; rounds: number[] };
  /**
   * The estimator's calibration: a request doing only CPU work (`spin`, no I/O), its Worker CPU as measured (each
   * round), workerd's whole process CPU in the same window (the Worker's CPU plus the request's handling and the
   * profiler: an upper bound that needs no estimate) and the CPU the same loop takes in this Node process's V8
   * (median of 5; V8 may compile the loop differently in the two), ms.
   */
  calibration: { workerMs: number[]; processMs: number[]; nodeMs: number };
}

/** The calibration request: SPIN_N × 100,000 rounds of spin (~10 ms in V8 here). */
const SPIN_N = 70;

function nodeSpinMs(): number {
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = process.cpuUsage();
    for (let i = 0; i < SPIN_N; i++) spin(100_000);
    const used = process.cpuUsage(start);
    runs.push((used.user + used.system) / 1000);
  }
  return median(runs);
}

/** Runs the floor Worker in its own workerd; `work` is a scratch directory. */
export async function benchStorageFloor(
  work: string,
  options: { n?: number; rounds?: number; mix?: Readonly<Record<string, number>>; kinds?: readonly string[] } = {},
): Promise<StorageFloor> {
  const n = options.n ?? 40;
  const measured = options.kinds ?? STORAGE_OPS;
  const rounds = options.rounds ?? 5;
  const inspectorPort = await freePort();
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/bench-worker.ts') }, undefined, { inspectorPort });
  /** GET a floor path of the bench Worker, its body read; throws unless 200. */
  const get = async (path: string) => {
    const response = await fetch(`${runtime.origin}/__bench/floor/${path}`);
    if (!response.ok) throw new Error(`${path}: ${response.status}`);
    await response.arrayBuffer();
  };
  try {
    await get(`seed?n=${n}`);
    const kinds = ['none', ...measured];
    const mixUrl = options.mix ? `op?n=1&mix=${encodeURIComponent(JSON.stringify(options.mix))}` : null;
    const mixRounds: number[] = [];
    const calibration: number[] = [];
    const calibrationProcess: number[] = [];
    if (mixUrl) await get(mixUrl);
    // Warm the isolate on every kind first.
    for (const kind of [...kinds, 'spin']) await get(`op?kind=${kind}&n=2`);
    const profiler = await workerProfiler(inspectorPort, runtime.pid);
    const cpu = new Map<string, number[]>(kinds.map((k) => [k, []]));
    try {
      for (let round = 0; round < rounds; round++) {
        const { cpu: recording } = await profiler.record(async () => {
          for (const kind of kinds) await get(`op?kind=${kind}&n=${n}`);
          if (mixUrl) await get(mixUrl);
          await get(`op?kind=spin&n=${SPIN_N}`);
        });
        calibration.push(recording.requests.at(-1)!.cpuMs);
        calibrationProcess.push(recording.requests.at(-1)!.upperBoundMs);
        if (mixUrl) mixRounds.push(recording.requests.at(-2)!.cpuMs);
        recording.requests.slice(0, kinds.length).forEach((r, i) => cpu.get(kinds[i]!)!.push(r.cpuMs));
      }
    } finally {
      profiler.close();
    }
    const requestMs = median(cpu.get('none')!);
    return {
      n,
      requestMs,
      perOp: measured.map((kind) => ({ kind, cpuMs: Math.max(0, median(cpu.get(kind)!) - requestMs) / n })),
      ...(options.mix ? { mix: { requests: Object.values(options.mix).reduce((a, b) => a + b, 0), cpuMs: median(mixRounds), rounds: mixRounds } } : {}),
      calibration: { workerMs: calibration, processMs: calibrationProcess, nodeMs: nodeSpinMs() },
    };
  } finally {
    await runtime.dispose();
  }
}

/** The lines `bench:publish-api` and this script print. */
export function storageFloorTable(floor: StorageFloor): string[] {
  return [
    `storage floor (bench/bench-worker-floor.ts: ${floor.n} sequential operations per request on ~600-byte JSON, minus an empty request of ${floor.requestMs.toFixed(2)} ms; Worker CPU per operation, median):`,
    ...floor.perOp.map((o) => `  ${o.kind.padEnd(26)} ${o.cpuMs.toFixed(3)} ms`),
    `  calibration: a CPU-only request (no I/O) measured ${median(floor.calibration.workerMs).toFixed(1)} ms in the Worker (rounds: ${floor.calibration.workerMs.map((r) => r.toFixed(1)).join(', ')}); workerd's whole process CPU in the same windows ${floor.calibration.processMs.map((r) => r.toFixed(1)).join(', ')} ms; the same loop in this Node's V8: ${floor.calibration.nodeMs.toFixed(1)} ms`,
    ...(floor.mix
      ? [
          `  one request making only the publish commit's ${floor.mix.requests} storage requests (test/fixtures/commit-requests.ts): ${floor.mix.cpuMs.toFixed(1)} ms (rounds: ${floor.mix.rounds.map((r) => r.toFixed(1)).join(', ')})`,
        ]
      : []),
  ];
}

await script(
  import.meta,
  'storage-floor',
  async (work) => {
    const before = loadavg();
    const rounds = Number(option('rounds') ?? 5);
    const floor = await benchStorageFloor(work, flag('pieces') ? { rounds, n: 20, kinds: PIECES } : { rounds, mix: COMMIT_REQUESTS });
    if (flag('json')) return console.log(JSON.stringify({ storageFloor: floor, loadavg: [before, loadavg()] }));
    console.log(`load average ${loadAverages(before)} → ${loadAverages()}\n${storageFloorTable(floor).join('\n')}`);
  },
  { inspector: true },
);
