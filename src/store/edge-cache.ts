/**
 * The location's edge cache (the Workers Cache API, `caches.default`): one
 * per Cloudflare location, shared by every isolate there, unlike the
 * isolate's own LRU. Only immutable things go in (release files, a version's
 * documents); lists never do.
 *
 * Entries are keyed by what is stored, never by the request: a reserved path
 * on the request's origin (`/.edge-cache/r2/KEY`, `/.edge-cache/kv/KEY`)
 * without query, so a signed URL or a token never becomes part of a key and
 * every client of the location shares one entry. The Worker runs before the
 * cache on every request, so an entry is only ever served by our own code,
 * after the route's guard (token or signature) has passed; entries carry a
 * public Cache-Control for the cache's own lifetime, and each answer gets
 * the Cache-Control of its request.
 *
 * On Cloudflare the Cache API works on custom domains only (on *.workers.dev
 * `put` does nothing and `match` always misses); everything still works
 * there, from R2 and KV.
 */

/** Cloudflare's largest cacheable object on Free, Pro and Business plans; bigger objects always stream from R2. */
export const EDGE_CACHE_MAX_BYTES = 512 * 1024 * 1024;

/** Cache-Control stored with an entry: how long the location may keep it. */
const STORED_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/** What was stored: an R2 object (release file, module archive) or a KV value (an immutable document). */
export type EdgeCacheKind = 'r2' | 'kv';

export interface EdgeCache {
  /** The entry for a stored object, or undefined; never throws (a failing cache is a miss). */
  match(kind: EdgeCacheKind, key: string, init?: { range?: string }): Promise<Response | undefined>;
  /**
   * Stores `response` for `key` after the current response is sent
   * (ctx.waitUntil), so it never delays it. `response` may be a promise (a
   * second read started later); undefined or a failed put just leaves the
   * entry missing. Puts of a key already being put by this isolate are
   * dropped.
   */
  put(kind: EdgeCacheKind, key: string, response: Response | Promise<Response | undefined>): void;
}

const inFlight = new Set<string>();

/** The URL an entry is stored under: a reserved path on `origin`, from the stored key alone (no query). */
export function edgeCacheUrl(origin: string, kind: EdgeCacheKind, key: string): string {
  return `${origin}/.edge-cache/${kind}/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * The edge cache for a request, or null where the runtime has none
 * (`caches` undefined). `ctx` keeps puts alive after the response.
 */
export function edgeCacheFor(request: Request, ctx: ExecutionContext | undefined): EdgeCache | null {
  if (typeof caches === 'undefined' || !caches.default) return null;
  const cache = caches.default;
  // Parsed on first use: a request answered from the isolate's own cache never touches the edge cache.
  let origin: string | undefined;
  const keyUrl = (kind: EdgeCacheKind, key: string) => edgeCacheUrl((origin ??= new URL(request.url).origin), kind, key);
  return {
    async match(kind, key, init) {
      try {
        const headers: Record<string, string> = init?.range ? { range: init.range } : {};
        return await cache.match(new Request(keyUrl(kind, key), { headers }));
      } catch (error) {
        console.error(`edge cache: match ${kind}/${key} failed`, error);
        return undefined;
      }
    },
    put(kind, key, response) {
      const url = keyUrl(kind, key);
      if (inFlight.has(url)) {
        void Promise.resolve(response)
          .then((r) => r?.body?.cancel())
          .catch(() => {});
        return;
      }
      inFlight.add(url);
      const done = Promise.resolve(response)
        .then(async (r) => {
          if (!r) return;
          try {
            await cache.put(url, r);
          } finally {
            // A put that gave up early must not leave a tee'd branch unread (the isolate would buffer it).
            if (r.body && !r.bodyUsed) await r.body.cancel().catch(() => {});
          }
        })
        .catch((error: unknown) => console.error(`edge cache: put ${kind}/${key} failed`, error))
        .finally(() => inFlight.delete(url));
      ctx?.waitUntil(done);
    },
  };
}

/** The response to store for an object: its body with the headers a later hit is answered from. */
export function storedResponse(body: ReadableStream | string, headers: Record<string, string>): Response {
  return new Response(body, { headers: { ...headers, 'cache-control': STORED_CACHE_CONTROL } });
}
