/**
 * Bench-only Worker (never deployed) for the cost of counting downloads
 * (bench/download-counting.ts): the registry Worker with its DOWNLOADS
 * binding wrapped to count the requests made to the counting objects, and
 * extra paths:
 *
 * - /__bench/loop?path=P&n=N&mode=off|on|unbatched: GET P N times inside
 *   this one request (bodies read) with counting off (no DOWNLOADS), on (the
 *   configured window) or unbatched (DOWNLOAD_BATCH_MS 0: one object request
 *   per download); the bench divides workerd's CPU time by N;
 * - /__bench/rpcs[?reset]: requests made to the objects so far;
 * - /__bench/add?items=K: one batch of K distinct (version, platform) items
 *   sent straight to an object; answers the SQLite rows it read and wrote.
 */
import worker from '../src/index';
import type { Env } from '../src/env';

export { DownloadCounter } from '../src/downloads/counter';

let rpcs = 0;

function countingDownloads(namespace: NonNullable<Env['DOWNLOADS']>): NonNullable<Env['DOWNLOADS']> {
  return new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      if (property === 'get') {
        return (...args: unknown[]) => {
          rpcs++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}

// One Env per mode and runtime Env (settings are memoised per Env object).
const variants = new WeakMap<Env, Record<'on' | 'off' | 'unbatched', Env>>();
function envs(env: Env): Record<'on' | 'off' | 'unbatched', Env> {
  let result = variants.get(env);
  if (!result) {
    const on = { ...env, DOWNLOADS: countingDownloads(env.DOWNLOADS!) };
    variants.set(env, (result = { on, off: { ...env, DOWNLOADS: undefined }, unbatched: { ...on, DOWNLOAD_BATCH_MS: '0' } }));
  }
  return result;
}

async function loop(url: URL, env: Env, ctx: ExecutionContext): Promise<Response> {
  const target = new URL(url.searchParams.get('path') ?? '/', url).href;
  const n = Number(url.searchParams.get('n') ?? '1000');
  const mode = (url.searchParams.get('mode') ?? 'on') as 'on' | 'off' | 'unbatched';
  for (let i = 0; i < n; i++) {
    const response = await worker.fetch(new Request(target), envs(env)[mode], ctx);
    if (response.status !== 200) return new Response(`GET ${target}: ${response.status}`, { status: 500 });
    await response.arrayBuffer();
  }
  return new Response(null, { status: 204 });
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/__bench/loop') return loop(url, env, ctx);
    if (url.pathname === '/__bench/rpcs') {
      const body = Response.json({ rpcs });
      if (url.searchParams.has('reset')) rpcs = 0;
      return body;
    }
    if (url.pathname === '/__bench/add') {
      const k = Number(url.searchParams.get('items') ?? '1');
      const stub = env.DOWNLOADS!.get(env.DOWNLOADS!.idFromName(`bench/add/${url.searchParams.get('name') ?? 'x'}`));
      const increments = Array.from({ length: k }, (_, i) => [`1.0.${i}`, 'linux_amd64', 1] as [string, string, number]);
      return Response.json(await stub.add(new Date().toISOString().slice(0, 10), increments));
    }
    return worker.fetch(request, envs(env).on, ctx);
  },
} satisfies ExportedHandler<Env>;
