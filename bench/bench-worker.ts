/**
 * The bench Worker (never deployed; bench/build.ts builds it for every bench that needs more than the plain
 * registry): the registry Worker with its bindings wrapped by one counting wrapper (`counted`), and the bench's own
 * paths, none of which the production Worker has.
 *
 * Counting. Every KV, R2 and DOWNLOADS binding call the registry makes, and every subrequest (`fetch`), is counted
 * by "binding:method" and by the route of the request that made it (`routeOf`); the wrapped Env is made once per
 * runtime Env and route, as the Worker memoises its settings per Env object. /__bench/ops reports them (`ops`
 * below: runtime.ts `readsOf` sums the reads among them; bench/cost.ts bills ?detail by route as Cloudflare does);
 * it is not itself counted.
 *
 * Other paths: /__bench/loop (N requests handled inside one, for the Worker's own CPU per request), /__bench/add
 * (one batch straight to a counting object), /__bench/cache and /__bench/statuses (the soak), /__sign and
 * /__verify (trusted publishing's steps, bench/signing.ts), the byte paths of bench-worker-bytes.ts and the
 * floors of bench-worker-floor.ts.
 */
import worker from '../src/index';
import type { Env } from '../src/env';
import { verifyCiToken } from '../src/access/ci-token';
import type { TrustedPublisher } from '../src/access/publishers';
import { signShasumsWithHeldKey } from '../src/store/keys/held-keys';
import { documentCacheStats } from '../src/store/read-document';
import { bytePaths } from './bench-worker-bytes';
import { storageFloor } from './bench-worker-floor';

export { DownloadCounter } from '../src/downloads/counter';

/**
 * The one counting wrapper: `binding` with every method call reported to `count(method, args)` and then passed on
 * unchanged to the real binding (its answer, its errors); properties that are not methods are read through.
 */
export function counted<T extends object>(binding: T, count: (method: string, args: unknown[]) => void): T {
  return new Proxy(binding, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        count(String(property), args);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** A request's route as bench/cost.ts names it (and the soak's statuses). */
export function routeOf(pathname: string): string {
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

/**
 * Every binding call and subrequest since the last reset, keyed "binding:method|kind|segment": the request's kind
 * ("METHOD route") and, for KV, the key's first segment (v1, records, signing-keys, tokens); each request itself as
 * "worker:request|kind|". /__bench/ops sums them by "binding:method"; ?detail reports the keys themselves.
 */
let ops: Record<string, number> = {};
const add = (op: string, kind = '', segment = '') => void (ops[`${op}|${kind}|${segment}`] = (ops[`${op}|${kind}|${segment}`] ?? 0) + 1);

/** /__bench/ops[?detail][&reset]: the counts, by "binding:method" or in detail; ?reset zeroes them after. */
function opsReport(url: URL): Response {
  const byOp: Record<string, number> = {};
  for (const [key, n] of Object.entries(ops)) if (!key.startsWith('worker:')) byOp[key.split('|')[0]!] = (byOp[key.split('|')[0]!] ?? 0) + n;
  const response = Response.json(url.searchParams.has('detail') ? ops : byOp);
  if (url.searchParams.has('reset')) ops = {};
  return response;
}

const realFetch = globalThis.fetch;
globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
  add('subrequest:fetch');
  return realFetch(input, init);
}) as typeof fetch;

const wrapped = new WeakMap<Env, Map<string, Env>>();
/** The runtime's Env with KV, R2 and DOWNLOADS counted for requests of `kind`; one per Env and kind. */
function countingEnv(env: Env, kind: string): Env {
  let byKind = wrapped.get(env);
  if (!byKind) wrapped.set(env, (byKind = new Map()));
  const of = (prefix: string) => (method: string, args: unknown[]) => add(`${prefix}:${method}`, kind, prefix === 'kv' ? String(args[0]).split('/')[0] : '');
  if (!byKind.has(kind))
    byKind.set(kind, {
      ...env,
      REGISTRY_KV: counted(env.REGISTRY_KV, of('kv')),
      REGISTRY_R2: counted(env.REGISTRY_R2, of('r2')),
      ...(env.DOWNLOADS ? { DOWNLOADS: counted(env.DOWNLOADS, of('downloads')) } : {}),
    });
  return byKind.get(kind)!;
}

/**
 * Answers per route and status, and the requests whose response never came (workerd answers a request it finds
 * hung with its own 500, which the Worker never sees: such a request stays here). /__bench/statuses reports both.
 */
const statuses = new Map<string, number>();
const pending = new Map<number, { route: string; path: string; gzip: boolean; started: number }>();
let nextRequest = 0;

async function tracked(request: Request, route: string, answer: () => Promise<Response>): Promise<Response> {
  const id = nextRequest++;
  pending.set(id, { route, path: new URL(request.url).pathname, gzip: /gzip/.test(request.headers.get('accept-encoding') ?? ''), started: Date.now() });
  try {
    const response = await answer();
    statuses.set(`${route} ${response.status}`, (statuses.get(`${route} ${response.status}`) ?? 0) + 1);
    return response;
  } catch (error) {
    statuses.set(`${route} threw`, (statuses.get(`${route} threw`) ?? 0) + 1);
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
 * /__bench/loop?path=P&n=N&mode=on|off|unbatched (download counting): handles GET P N times inside this one request
 * (each answer 200, its body read to the end) with downloads counted on (the configured window), off (no DOWNLOADS)
 * or unbatched (DOWNLOAD_BATCH_MS 0: one object request per download), and answers 204; the bench divides the
 * process CPU time it took by N: the Worker's own JavaScript per request without the HTTP stack.
 */
async function loop(url: URL, env: Env, ctx: ExecutionContext): Promise<Response> {
  const target = new URL(url.searchParams.get('path') ?? '/', url).href;
  const loopEnv = downloadsEnv(env)[url.searchParams.get('mode') as 'on' | 'off' | 'unbatched'];
  for (let i = 0, n = Number(url.searchParams.get('n') ?? '1000'); i < n; i++) {
    const response = await worker.fetch(new Request(target), loopEnv, ctx);
    if (response.status !== 200) return new Response(`GET ${target}: ${response.status}`, { status: 500 });
    await response.arrayBuffer();
  }
  return new Response(null, { status: 204 });
}

const variants = new WeakMap<Env, Record<'on' | 'off' | 'unbatched', Env>>();
/** The runtime's Env with only DOWNLOADS counted (on), without it (off), and counted unbatched; made once per Env. */
function downloadsEnv(env: Env): Record<'on' | 'off' | 'unbatched', Env> {
  let result = variants.get(env);
  if (!result) {
    const on = { ...env, DOWNLOADS: counted(env.DOWNLOADS!, (method) => add(`downloads:${method}`)) };
    variants.set(env, (result = { on, off: { ...env, DOWNLOADS: undefined }, unbatched: { ...on, DOWNLOAD_BATCH_MS: '0' } }));
  }
  return result;
}

const SUMS = new TextEncoder().encode(`${'c'.repeat(64)}  terraform-provider-bench_1.0.0_linux_amd64.zip\n`.repeat(3));

/** POST /__sign?ns=NS: signShasumsWithHeldKey with the held key of NS (its secret in X-Secret); answers the key id. */
async function signHeld(request: Request, url: URL, env: Env): Promise<Response> {
  const secret = { signingKeySecret: request.headers.get('x-secret') ?? '' };
  const signed = await signShasumsWithHeldKey({ kv: env.REGISTRY_KV }, secret, 'registry.example.com', url.searchParams.get('ns')!, SUMS);
  return new Response(signed?.keyId ?? 'none');
}

/** POST /__verify?n=N: N × verifyCiToken of the token in the body against the publishers in X-Publishers (JSON), aud registry.example.com. */
async function verifyCi(request: Request, url: URL): Promise<Response> {
  const token = await request.text();
  const publishers = JSON.parse(request.headers.get('x-publishers') ?? '[]') as TrustedPublisher[];
  const pkg = { kind: 'provider', namespace: 'acme', type: 'thing' } as const;
  let subject = '';
  for (let i = 0, n = Number(url.searchParams.get('n') ?? '1'); i < n; i++)
    subject = (await verifyCiToken(token, { namespace: 'acme', pkg, publishers, hostname: 'registry.example.com' })).actor.subject;
  return new Response(subject);
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname;
    if (path === '/__bench/ops') return opsReport(url);
    if (path === '/__bench/loop') return loop(url, env, ctx);
    // The isolate's document cache: entries, counted bytes, its bound, evictions (the soak samples it).
    if (path === '/__bench/cache') return Response.json(documentCacheStats());
    if (path === '/__bench/statuses') return statusReport();
    if (path === '/__bench/add') {
      const k = Number(url.searchParams.get('items') ?? '1');
      const stub = env.DOWNLOADS!.get(env.DOWNLOADS!.idFromName(`bench/add/${url.searchParams.get('name') ?? 'x'}`));
      const increments = Array.from({ length: k }, (_, i) => [`1.0.${i}`, 'linux_amd64', 1] as [string, string, number]);
      return Response.json(await stub.add(new Date().toISOString().slice(0, 10), increments));
    }
    if (path === '/__sign') return signHeld(request, url, env);
    if (path === '/__verify') return verifyCi(request, url);
    if (path.startsWith('/__bench/floor/')) return storageFloor(url, env);
    const bytes = bytePaths(request, url);
    if (bytes) return bytes;
    const route = routeOf(path);
    const kind = `${request.method} ${route}`;
    add('worker:request', kind);
    return tracked(request, route, () => worker.fetch(request, countingEnv(env, kind), ctx));
  },
} satisfies ExportedHandler<Env>;
