/**
 * Bench-only Worker (never deployed) for `bench/cost.ts`: the registry Worker
 * with every request counted by kind, and its KV and R2 bindings wrapped so
 * each read is counted as Cloudflare bills it (KV: get/getWithMetadata; R2
 * class B: get, head). GET /__cost/counts reports the counts (?reset zeroes
 * them) and is not itself counted.
 */
import worker from '../src/index';
import type { Env } from '../src/env';

interface Counts {
  requests: number;
  byRoute: Record<string, number>;
  /** KV reads by the key's first segment (v1, records, signing-keys, tokens). */
  kvReadsByKey: Record<string, number>;
  /** KV reads and R2 class-B reads by "METHOD route" of the request that made them. */
  kvReadsByRoute: Record<string, number>;
  r2ClassBByRoute: Record<string, number>;
  kvReads: number;
  r2ClassB: number;
  r2ClassA: number;
}

const fresh = (): Counts => ({ requests: 0, byRoute: {}, kvReadsByKey: {}, kvReadsByRoute: {}, r2ClassBByRoute: {}, kvReads: 0, r2ClassB: 0, r2ClassA: 0 });
let counts = fresh();

function route(pathname: string): string {
  if (pathname === '/.well-known/terraform.json') return 'discovery';
  if (/^\/v1\/providers\/[^/]+\/[^/]+\/versions$/.test(pathname)) return 'provider versions';
  if (/\/download\/[^/]+\/[^/]+$/.test(pathname) && pathname.startsWith('/v1/providers/')) return 'provider download document';
  if (pathname.startsWith('/v1/mirror/') && pathname.endsWith('/index.json')) return 'mirror index';
  if (pathname.startsWith('/v1/mirror/')) return 'mirror version';
  if (pathname.startsWith('/v1/archives/')) {
    if (pathname.endsWith('_SHA256SUMS')) return 'SHA256SUMS';
    if (pathname.endsWith('_SHA256SUMS.sig')) return 'SHA256SUMS.sig';
    return 'archive';
  }
  if (pathname.startsWith('/v1/modules/')) return pathname.endsWith('/versions') ? 'module versions' : 'module download';
  if (pathname.startsWith('/v1/module-archives/')) return 'module archive';
  return 'other';
}

function wrap<T extends object>(target: T, count: (property: string, args: unknown[]) => void): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        count(String(property), args);
        return (value as (...a: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/__cost/counts') {
      const body = JSON.stringify(counts);
      if (url.searchParams.has('reset')) counts = fresh();
      return new Response(body, { headers: { 'content-type': 'application/json' } });
    }
    counts.requests++;
    const kind = `${request.method} ${route(url.pathname)}`;
    counts.byRoute[kind] = (counts.byRoute[kind] ?? 0) + 1;
    const kv = wrap(env.REGISTRY_KV, (p, args) => {
      if (p !== 'get' && p !== 'getWithMetadata') return;
      counts.kvReads++;
      counts.kvReadsByRoute[kind] = (counts.kvReadsByRoute[kind] ?? 0) + 1;
      const prefix = String(args[0]).split('/')[0]!;
      counts.kvReadsByKey[prefix] = (counts.kvReadsByKey[prefix] ?? 0) + 1;
    });
    const r2 = wrap(env.REGISTRY_R2, (p) => {
      if (p === 'get' || p === 'head') {
        counts.r2ClassB++;
        counts.r2ClassBByRoute[kind] = (counts.r2ClassBByRoute[kind] ?? 0) + 1;
      } else if (p === 'put' || p === 'list' || p.startsWith('createMultipart')) counts.r2ClassA++;
    });
    return worker.fetch(request, { ...env, REGISTRY_KV: kv, REGISTRY_R2: r2 }, ctx);
  },
} satisfies ExportedHandler<Env>;

// wrangler.toml binds the DOWNLOADS Durable Object: a Worker built with it must export the class.
export { DownloadCounter } from '../src/downloads/counter';
