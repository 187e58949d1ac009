/**
 * The V8 heaps inside workerd, read through its inspector (Chrome DevTools protocol): the Worker's isolate and,
 * summed, the others Miniflare runs in the same process (its KV/R2 simulators, the cache). Tells a growing RSS apart:
 * the Worker's JavaScript heap, or memory outside it. Needs a global WebSocket (Node 22, or Node 20 with
 * --experimental-websocket).
 */

export interface HeapFigures {
  /** The Worker's isolate: bytes in use and the heap's size. */
  workerUsedMb: number;
  workerTotalMb: number;
  /** The Worker's memory in use: its V8 heap, workerd's objects on it, and ArrayBuffer backing stores outside it. */
  workerInUseMb: number;
  /** Every other isolate of the process, summed. */
  othersTotalMb: number;
  /** Each isolate's heap size by inspector target id (Miniflare's KV/R2/cache simulators are separate targets). */
  totalMbByTarget: Record<string, number>;
}

interface Target {
  id: string;
  webSocketDebuggerUrl: string;
}

/** Connects to every isolate of the workerd whose inspector listens on `port`; `workerId` names the Worker's ("core:user:" for Miniflare's first worker). */
export async function connectHeaps(
  port: number,
  workerId = 'core:user:',
): Promise<{
  sample(): Promise<HeapFigures>;
  /**
   * A full garbage collection in every isolate ('others': all but the Worker's; 'worker': its alone), one after
   * another: what is left is live. Done by taking a heap snapshot and throwing it away (a
   * snapshot collects first): workerd never answers HeapProfiler.collectGarbage.
   */
  collectGarbage(which?: 'all' | 'others' | 'worker'): Promise<void>;
  close(): void;
}> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as Target[];
  const sessions = await Promise.all(targets.map(async (target) => ({ id: target.id, session: await open(target.webSocketDebuggerUrl) })));
  if (!sessions.some((s) => s.id === workerId)) throw new Error(`no inspector target ${workerId} among ${targets.map((t) => t.id).join(', ')}`);
  type Usage = { usedSize: number; totalSize: number; embedderHeapUsedSize?: number; backingStorageSize?: number };
  const usage = async (session: Session) => (await session.call('Runtime.getHeapUsage')) as Usage;
  return {
    async sample() {
      const figures = await Promise.all(sessions.map(async (s) => ({ id: s.id, ...(await usage(s.session)) })));
      const worker = figures.find((f) => f.id === workerId)!;
      const mb = (n: number) => n / 1024 / 1024;
      return {
        workerUsedMb: mb(worker.usedSize),
        workerTotalMb: mb(worker.totalSize),
        workerInUseMb: mb(worker.usedSize + (worker.embedderHeapUsedSize ?? 0) + (worker.backingStorageSize ?? 0)),
        othersTotalMb: mb(figures.filter((f) => f.id !== workerId).reduce((sum, f) => sum + f.totalSize, 0)),
        totalMbByTarget: Object.fromEntries(figures.map((f) => [f.id, mb(f.totalSize)])),
      };
    },
    async collectGarbage(which = 'all') {
      for (const s of sessions) {
        if ((which === 'others' && s.id === workerId) || (which === 'worker' && s.id !== workerId)) continue;
        await s.session.call('HeapProfiler.takeHeapSnapshot', { reportProgress: false }, 300_000);
      }
    },
    close() {
      for (const s of sessions) s.session.close();
    },
  };
}

export interface Session {
  call(method: string, params?: object, timeoutMs?: number): Promise<unknown>;
  close(): void;
}

export async function open(url: string): Promise<Session> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve());
    socket.addEventListener('error', () => reject(new Error(`cannot open the inspector at ${url}`)));
  });
  let next = 0;
  const pending = new Map<number, (result: unknown) => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
    if (message.id !== undefined) pending.delete(message.id);
  });
  return {
    call(method, params = {}, timeoutMs = 10_000) {
      const id = ++next;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => (pending.delete(id), reject(new Error(`${method}: no answer from ${url}`))), timeoutMs);
        pending.set(id, (result) => (clearTimeout(timer), resolve(result)));
        socket.send(JSON.stringify({ id, method, params }));
      });
    },
    close: () => socket.close(),
  };
}
