/**
 * Bench-only Worker (never deployed): the registry Worker with its KV
 * and R2 bindings wrapped in proxies that count reads, and extra paths:
 * /__bench/kv-reads, that reports (and with ?reset, zeroes) the KV count,
 * /__bench/reads, KV and R2 (get, head) reads alike, and /__bench/cache,
 * the isolate document cache's figures, /__bench/statuses, answers per
 * route and status and the requests never answered. The production Worker has no such
 * paths.
 */
import worker from '../src/index';
import type { Env } from '../src/env';
import { documentCacheStats } from '../src/store/read-document';

let reads = 0;
let r2Reads = 0;

/**
 * Answers per route and status, and the requests whose response never came
 * (workerd answers a request it finds hung with its own 500, which the Worker
 * never sees: such a request stays here). Route = the path with the version,
 * os/arch and file names dropped. /__bench/statuses reports both.
 */
const statuses = new Map<string, number>();
const pending = new Map<number, { route: string; path: string; gzip: boolean; started: number }>();
let nextRequest = 0;

function routeOf(path: string): string {
  if (path.startsWith('/v1/archives/')) return '/v1/archives/…';
  if (path.startsWith('/v1/mirror/')) return path.endsWith('/index.json') ? '/v1/mirror/…/index.json' : '/v1/mirror/…/VERSION.json';
  if (path.startsWith('/v1/providers/')) return path.endsWith('/versions') ? '/v1/providers/…/versions' : '/v1/providers/…/download/…';
  return path;
}

async function tracked(request: Request, answer: () => Promise<Response>): Promise<Response> {
  const path = new URL(request.url).pathname;
  const id = nextRequest++;
  const route = routeOf(path);
  pending.set(id, { route, path, gzip: /gzip/.test(request.headers.get('accept-encoding') ?? ''), started: Date.now() });
  try {
    const response = await answer();
    const key = `${route} ${response.status}`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    return response;
  } catch (error) {
    const key = `${route} threw`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    throw error;
  } finally {
    pending.delete(id);
  }
}

function statusReport(): Response {
  const now = Date.now();
  return Response.json({
    statuses: Object.fromEntries([...statuses].sort()),
    // Older than 10 s: the load's client gave up after 5 s, so these never got their answer.
    stuck: [...pending.values()].filter((p) => now - p.started > 10_000).map((p) => ({ ...p, ageSeconds: Math.round((now - p.started) / 1000) })),
  });
}

/**
 * /__bench/loop?path=P&n=N: handles GET P N times inside this one request
 * (body read to the end each time) and answers 204. The bench divides the
 * process CPU time it took by N: the Worker's own JavaScript per request,
 * without the HTTP stack (workerd's clock does not advance while JS runs, so
 * only the process CPU time can measure this). path=- measures a constant
 * Response for comparison.
 */
async function loop(url: URL, env: Env, ctx: ExecutionContext): Promise<Response> {
  const path = url.searchParams.get('path') ?? '/';
  const n = Number(url.searchParams.get('n') ?? '1000');
  const target = new URL(path, url).href;
  for (let i = 0; i < n; i++) {
    const response =
      path === '-'
        ? new Response('{"providers.v1":"/v1/providers/"}', { headers: { 'content-type': 'application/json' } })
        : await worker.fetch(new Request(target), env, ctx);
    await response.arrayBuffer();
  }
  return new Response(null, { status: 204 });
}

/** The R2 binding with get and head counted (/__bench/reads reports them with the KV reads). */
function countingR2(r2: R2Bucket): R2Bucket {
  return new Proxy(r2, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      if (property === 'get' || property === 'head') {
        return (...args: unknown[]) => {
          r2Reads++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}

function counting(kv: KVNamespace): KVNamespace {
  return new Proxy(kv, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      if (property === 'get' || property === 'getWithMetadata') {
        return (...args: unknown[]) => {
          reads++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}

// One wrapped Env per Env the runtime passes (it passes the same one to every request), as the
// Worker's settings are memoised per Env object: a fresh copy per request would re-parse them.
const wrapped = new WeakMap<Env, Env>();
function countingEnv(env: Env): Env {
  let result = wrapped.get(env);
  if (!result) wrapped.set(env, (result = { ...env, REGISTRY_KV: counting(env.REGISTRY_KV), REGISTRY_R2: countingR2(env.REGISTRY_R2) }));
  return result;
}

export default {
  fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/__bench/kv-reads') {
      const body = JSON.stringify({ reads });
      if (url.searchParams.has('reset')) reads = 0;
      return new Response(body, { headers: { 'content-type': 'application/json' } });
    }
    if (url.pathname === '/__bench/reads') {
      const body = JSON.stringify({ kv: reads, r2: r2Reads });
      if (url.searchParams.has('reset')) [reads, r2Reads] = [0, 0];
      return new Response(body, { headers: { 'content-type': 'application/json' } });
    }
    if (url.pathname === '/__bench/loop') return loop(url, env, ctx);
    // The isolate's document cache: entries, counted bytes, its bound, evictions (the soak samples it).
    if (url.pathname === '/__bench/cache') return Response.json(documentCacheStats());
    if (url.pathname === '/__bench/statuses') return statusReport();
    return tracked(request, async () => worker.fetch(request, countingEnv(env), ctx));
  },
} satisfies ExportedHandler<Env>;

// wrangler.toml binds the DOWNLOADS Durable Object: a Worker built with it must export the class.
export { DownloadCounter } from '../src/downloads/counter';
