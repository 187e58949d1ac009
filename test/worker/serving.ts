import { env } from 'cloudflare:workers';
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import worker from '../../src/index';
import type { Env } from '../../src/env';
import { edgeCacheUrl, type EdgeCacheKind } from '../../src/store/edge-cache';
import { ORIGIN } from './helpers';

/**
 * Helpers for tests of what the Worker reads to answer: a request with its
 * own ExecutionContext (so the edge-cache puts it schedules can be awaited),
 * and the real R2 binding wrapped to count reads.
 */

/** Sends a request to the Worker (bindings replaced by `overrides`); `settled()` waits for its waitUntil work (cache puts). */
export async function send(path: string, init: RequestInit = {}, overrides: Partial<Env> = {}): Promise<{ response: Response; settled: () => Promise<void> }> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(new URL(path, ORIGIN), init) as never, { ...env, ...overrides } as Env, ctx);
  return { response, settled: () => waitOnExecutionContext(ctx) };
}

/** GETs a path, reads the body to the end and waits until the edge cache has been filled. */
export async function warm(path: string, overrides: Partial<Env> = {}): Promise<void> {
  const { response, settled } = await send(path, {}, overrides);
  await response.arrayBuffer();
  await settled();
}

/** Forgets the location's cache entry of an R2 object or KV value (as a location that never saw it). */
export async function evict(kind: EdgeCacheKind, key: string): Promise<void> {
  await caches.default.delete(edgeCacheUrl(ORIGIN, kind, key));
}

/** Wraps the real R2 binding and counts get and head calls. */
export function countingR2(): { r2: R2Bucket; reads: () => number } {
  let reads = 0;
  const real = env.REGISTRY_R2;
  const r2 = new Proxy(real, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === 'get' || property === 'head') {
        return (...args: unknown[]) => {
          reads++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { r2, reads: () => reads };
}
