/**
 * Bench-only Worker (never deployed) for `npm run bench:pull`: the registry
 * Worker with every KV and R2 binding call counted by method, and every
 * outgoing fetch (a subrequest) counted, reported (and with ?reset zeroed)
 * at /__bench/ops. Calls made in waitUntil after the response count too.
 *
 * /__bench/cpu?what=copy&mb=N runs the pull's verified copy (SHA-256 while
 * streaming into two length-checked streams, drained) over N MiB made in
 * memory: no I/O, so the process CPU it takes is the Worker's own work.
 * what=h1&key=K computes the h1 of R2 object K as the pull does; what=read&key=K
 * only reads it (the simulator's share, to subtract).
 *
 * POST /__bench/repack?times=N with a GitHub tarball as the body runs the
 * module proxy's own work on it N times (unpack, checks, deterministic
 * repack, gzip, docs, SHA-256): no I/O, for the module bench.
 */
import worker from '../src/index';
import type { Env } from '../src/env';
import { verifiedCopy } from '../src/mirror/verified-copy';
import { zipDigest } from '../src/mirror/zip-digest';
import { repackModule } from '../src/mirror/modules/repack';
import { proxiedModuleDocs } from '../src/mirror/modules/docs';

const ops: Record<string, number> = {};
const count = (name: string) => (ops[name] = (ops[name] ?? 0) + 1);

const realFetch = globalThis.fetch;
globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
  count('subrequest:fetch');
  return realFetch(input, init);
}) as typeof fetch;

function counted<T extends object>(binding: T, prefix: string): T {
  return new Proxy(binding, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        count(`${prefix}:${String(property)}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

const wrapped = new WeakMap<Env, Env>();
function countingEnv(env: Env): Env {
  let result = wrapped.get(env);
  if (!result) wrapped.set(env, (result = { ...env, REGISTRY_KV: counted(env.REGISTRY_KV, 'kv'), REGISTRY_R2: counted(env.REGISTRY_R2, 'r2') }));
  return result;
}

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/__bench/ops') {
      const body = JSON.stringify(ops);
      if (url.searchParams.has('reset')) for (const key of Object.keys(ops)) delete ops[key];
      return new Response(body, { headers: { 'content-type': 'application/json' } });
    }
    if (url.pathname === '/__bench/cpu') return cpu(url, env);
    if (url.pathname === '/__bench/repack') return repack(request, url);
    return worker.fetch(request, countingEnv(env), ctx);
  },
} satisfies ExportedHandler<Env>;

async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let bytes = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.byteLength;
  }
}

async function cpu(url: URL, env: Env): Promise<Response> {
  const what = url.searchParams.get('what');
  if (what === 'copy') {
    const size = Number(url.searchParams.get('mb')) * 1024 * 1024;
    const chunk = crypto.getRandomValues(new Uint8Array(65536));
    let sent = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= size) return controller.close();
        const piece = chunk.slice(0, Math.min(chunk.byteLength, size - sent));
        sent += piece.byteLength;
        controller.enqueue(piece);
      },
    });
    // The expected hash is unknown here: the copy must fail at the very end, after hashing every byte.
    const copy = verifiedCopy(source, { sha256Hex: '0'.repeat(64), size, idleMs: 60_000, what: 'bench' });
    const [a, b, done] = await Promise.allSettled([drain(copy.client), drain(copy.store), copy.done]);
    return Response.json({ client: a.status, store: b.status, done: done.status === 'rejected' ? String((done.reason as Error).message).slice(0, 60) : 'ok' });
  }
  const key = url.searchParams.get('key')!;
  const head = await env.REGISTRY_R2.head(key);
  if (!head) return new Response('no such object', { status: 404 });
  if (what === 'read') return Response.json({ bytes: await drain((await env.REGISTRY_R2.get(key))!.body) });
  const digest = await zipDigest(env.REGISTRY_R2, key, head.size);
  return Response.json(digest);
}
export { DownloadCounter } from '../src/downloads/counter';

async function repack(request: Request, url: URL): Promise<Response> {
  const bytes = new Uint8Array(await request.arrayBuffer());
  const times = Number(url.searchParams.get('times') ?? '1');
  let size = 0;
  for (let i = 0; i < times; i++) {
    const repacked = await repackModule(bytes, 'tar.gz', { stripTop: true, subdir: '', label: 'bench', maxUnpackedBytes: 64 * 1024 * 1024 });
    proxiedModuleDocs(repacked.texts);
    await crypto.subtle.digest('SHA-256', repacked.bytes);
    size = repacked.bytes.length;
  }
  return Response.json({ size });
}
