import { spawn } from 'node:child_process';
import { open } from './inspector';
import { cpuNanos } from './proc';

/**
 * The Worker's own CPU time per request, as Cloudflare bills and limits it
 * (Free: 10 ms per request). Requests are told apart by time: every fetch
 * this process makes while recording is a window (requests must be
 * sequential). Per window, two readings of workerd:
 *
 * - the process's CPU time (every thread's /proc schedstat, ns): true CPU,
 *   but it includes Miniflare's KV/R2/cache simulators (R2's SHA-256 check of
 *   a put, SQLite) and workerd's HTTP work, which on Cloudflare are not the
 *   Worker's;
 * - V8's sampling profiler on every isolate of the process (the Worker's is
 *   `core:user:`): non-idle samples per isolate. These are wall-clock
 *   samples, so on a loaded machine a preempted isolate still looks busy.
 *
 * The Worker's CPU (`cpuMs`) = the number of the Worker isolate's busy
 * samples × the sampling interval (100 µs). workerd's profiler takes a sample
 * only while the isolate runs; each sample's time delta is the wall time
 * since the previous one (idle gaps and other isolates' turns included), so
 * deltas are not summed. Counting samples gives a CPU-only loop in the Worker
 * the CPU the same loop takes in Node's V8 (bench/storage-floor.ts measures
 * this calibration in every run); on a loaded machine the sampler may miss a
 * few samples (the calibration says how many). `upperBoundMs` = the process
 * CPU in the window (every thread of workerd: simulators, HTTP, the profiler).
 */

export interface RequestCpu {
  /** "METHOD /path" with ids and versions left in. */
  request: string;
  /** The Worker's CPU: its isolate's busy samples in the window × the sampling interval (see above). */
  cpuMs: number;
  /** workerd's CPU in the window, every thread (an upper bound). */
  upperBoundMs: number;
  wallMs: number;
  /** The Worker isolate's busy samples in the window by function (self time, ms; largest first, top 25). */
  topFunctions: { name: string; ms: number }[];
  /** The same samples by function with its callees (inclusive time, ms; largest first, top 40): where a request's time goes. */
  inclusiveFunctions: { name: string; ms: number }[];
  /**
   * The Worker's busy samples in the window by kind of frame, as shares (0–1) of them, so `cpuMs × share` is
   * that kind's CPU: the Worker's own JavaScript (frames with a script URL), the runtime's binding and API
   * methods called from it (native frames such as `get`, `put`, `digest`), `(program)` (the VM outside any
   * frame) and `(garbage collector)`.
   */
  shares: Record<'javascript' | 'native methods' | '(program)' | '(garbage collector)', number>;
}

export interface CpuRecording {
  requests: RequestCpu[];
  /** The Worker isolate's busy samples over the whole recording, requests or not (wall-clock based: an upper bound). */
  totalCpuMs: number;
}

/** Connects to the Worker isolate's inspector on `port`. Throws when it is not there. */
export async function workerProfiler(
  port: number,
  pid: number,
  targetId = 'core:user:',
): Promise<{
  /** Runs `work` while profiling the Worker and recording each fetch of this process as a window. */
  record<T>(work: () => Promise<T>): Promise<{ result: T; cpu: CpuRecording }>;
  close(): void;
}> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { id: string; webSocketDebuggerUrl: string }[];
  const target = targets.find((t) => t.id === targetId);
  if (!target) throw new Error(`no inspector target ${targetId} among ${targets.map((t) => t.id).join(', ')}`);
  const session = await open(target.webSocketDebuggerUrl);
  await session.call('Profiler.enable');
  await session.call('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
  return {
    async record<T>(work: () => Promise<T>) {
      const windows: Window[] = [];
      const realFetch = globalThis.fetch;
      const nowUs = () => Number(process.hrtime.bigint() / 1000n);
      globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        const window: Window = {
          request: `${init?.method ?? (input instanceof Request ? input.method : 'GET')} ${url.pathname}${url.search}`,
          startUs: nowUs(),
          endUs: 0,
          cpuNs: -cpuNanos(pid),
        };
        try {
          const response = await realFetch(input, init);
          // The body is read here so the window holds all of the Worker's work for it.
          const body = await response.arrayBuffer();
          window.endUs = nowUs();
          window.cpuNs += cpuNanos(pid);
          return new Response(response.status === 204 || response.status === 304 ? null : body, {
            status: response.status,
            statusText: response.statusText,
            headers: response.headers,
          });
        } finally {
          if (window.endUs === 0) [window.endUs, window.cpuNs] = [nowUs(), window.cpuNs + cpuNanos(pid)];
          windows.push(window);
        }
      };
      await session.call('Profiler.start');
      let result!: T;
      try {
        result = await work();
      } finally {
        globalThis.fetch = realFetch;
      }
      await new Promise((resolve) => setTimeout(resolve, 50)); // let after-response work finish
      const { profile } = (await session.call('Profiler.stop', {}, 60_000)) as { profile: Profile };
      return { result, cpu: attribute(profile, windows) };
    },
    close: () => session.close(),
  };
}

interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url?: string; lineNumber?: number }; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface Window {
  request: string;
  startUs: number;
  endUs: number;
  cpuNs: number;
}

/** The profiler's sampling interval (µs): one busy sample stands for this much of the isolate's CPU. */
export const SAMPLING_INTERVAL_US = 100;

/** A frame's name in the tables: the function, and its bundle line when it has one. */
const frameName = (frame: Profile['nodes'][number]['callFrame']) =>
  `${frame.functionName || '(anonymous)'}${frame.url ? ` ${frame.url.split('/').at(-1)}:${(frame.lineNumber ?? 0) + 1}` : ''}`;

/** The `limit` largest of `totals` (ms per name), largest first. */
export const largest = (totals: Map<string, number>, limit: number) =>
  [...totals]
    .map(([name, ms]) => ({ name, ms }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, limit);

/**
 * The busy (non-idle) samples of `profile` inside `window`, each worth the sampling interval: the Worker's CPU (their
 * count × the interval), by function, self (the top 25) and with callees (each function once per sample it is on the
 * stack of; the top 40), and the shares of each kind of frame.
 */
function profileIn(profile: Profile, window: Window): Pick<RequestCpu, 'cpuMs' | 'topFunctions' | 'inclusiveFunctions' | 'shares'> {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const [self, inclusive] = [new Map<string, number>(), new Map<string, number>()];
  const add = (totals: Map<string, number>, name: string) => totals.set(name, (totals.get(name) ?? 0) + SAMPLING_INTERVAL_US / 1000);
  const shares = { javascript: 0, 'native methods': 0, '(program)': 0, '(garbage collector)': 0 };
  let all = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!;
    const frame = byNode.get(profile.samples[i]!);
    if (at < window.startUs || at > window.endUs || !frame || frame.functionName === '(idle)') continue;
    add(self, frameName(frame));
    const onStack = new Set<string>();
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id))
      if (byNode.get(id)!.functionName !== '(root)') onStack.add(frameName(byNode.get(id)!));
    for (const name of onStack) add(inclusive, name);
    const kind = ['(program)', '(garbage collector)'].includes(frame.functionName) ? frame.functionName : frame.url ? 'javascript' : 'native methods';
    shares[kind as keyof typeof shares] += 1;
    all += 1;
  }
  for (const key of Object.keys(shares) as (keyof typeof shares)[]) shares[key] = all === 0 ? 0 : shares[key] / all;
  return { cpuMs: (all * SAMPLING_INTERVAL_US) / 1000, topFunctions: largest(self, 25), inclusiveFunctions: largest(inclusive, 40), shares };
}

function attribute(worker: Profile, windows: readonly Window[]): CpuRecording {
  const idle = new Set(worker.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  return {
    requests: windows.map((w) => ({
      request: w.request,
      upperBoundMs: Math.max(0, w.cpuNs) / 1e6,
      wallMs: (w.endUs - w.startUs) / 1000,
      ...profileIn(worker, w),
    })),
    totalCpuMs: worker.samples.reduce((sum, node, i) => sum + (idle.has(node) ? 0 : worker.timeDeltas[i]!), 0) / 1000,
  };
}

/**
 * The inspector is a WebSocket, which Node 20 has behind a flag: when it is missing, runs this script again with the
 * flag and exits with its code (never returns then). Call first thing in an entry point.
 */
export async function withWebSocket(): Promise<void> {
  if (typeof globalThis.WebSocket !== 'undefined') return;
  const child = spawn(process.execPath, ['--experimental-websocket', '--no-warnings', ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(await new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1))));
}

/** The Workers plan a request with `cpuMs` of CPU fits: Free allows 10 ms per request, Paid 30 s by default. */
export function planFor(cpuMs: number): string {
  return cpuMs <= 10
    ? 'Free (≤ 10 ms CPU per request)'
    : cpuMs <= 30_000
      ? "Paid (over Free's 10 ms; Paid allows 30 s by default)"
      : 'Paid with a raised cpu_ms limit';
}
