import { env, exports } from 'cloudflare:workers';
import { vi } from 'vitest';
import worker from '../../src/index';
import type { Env } from '../../src/env';
import { providerAddress, type ProviderAddress } from '../../src/protocol/address';
import { publishVersions } from '../../src/store/providers/write';
import { fakeRelease, signRelease, type FakeRelease } from '../fixtures/release';

export const ORIGIN = 'https://registry.example.com';

/** A request to the Worker as deployed (bindings from wrangler.toml). */
export function get(path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(new URL(path, ORIGIN), init));
}

/** A request to the Worker with some variables or bindings replaced. */
export function getWith(
  overrides: Partial<Env>,
  path: string,
  init?: RequestInit,
  ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext,
): Promise<Response> {
  return worker.fetch(new Request(new URL(path, ORIGIN), init) as never, { ...env, ...overrides } as Env, ctx);
}

export function address(namespace: string, type: string, hostname = env.REGISTRY_HOSTNAME): ProviderAddress {
  return providerAddress(hostname, namespace, type);
}

/** Signs fake releases' SHA256SUMS with the fixture key and publishes them through the store's real write path. */
export async function seed(releases: FakeRelease[]): Promise<FakeRelease[]> {
  await Promise.all(releases.map(signRelease));
  await publishVersions({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, releases);
  return releases;
}

export { fakeRelease };

/** Resolves a URL from a response body against the URL of that response, as Terraform's installer does. */
export function resolve(url: string, responsePath: string): string {
  return new URL(url, new URL(responsePath, ORIGIN)).href;
}

export async function sha256HexOf(response: Response): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', await response.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** Wraps the real KV binding and counts its reads. */
export function countingKv(): { kv: KVNamespace; reads: () => number } {
  let reads = 0;
  const real = env.REGISTRY_KV;
  const kv = new Proxy(real, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === 'get' || property === 'getWithMetadata') {
        return (...args: unknown[]) => {
          reads++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { kv, reads: () => reads };
}

/**
 * Runs `request` with Date.now() faked to `ms` (the isolate caches read it),
 * then puts the real clock back: requests at chosen instants, to the
 * millisecond, without sleeping.
 */
export async function atFakeTime<T>(ms: number, request: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(ms);
  try {
    return await request();
  } finally {
    vi.useRealTimers();
  }
}

/**
 * Every KV key with its value's SHA-256 and every R2 object with its etag, listed in full from Miniflare's
 * bindings: a request that must change nothing leaves this equal (a lease taken or an audit entry written adds an
 * object; a rewrite changes a value or an etag).
 */
export async function storedEverything(): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.REGISTRY_KV.list(cursor ? { cursor } : {});
    for (const { name } of page.keys) out.push(`kv:${name} ${await sha256HexOf(new Response(await env.REGISTRY_KV.get(name, 'arrayBuffer')))}`);
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  let r2Cursor: string | undefined;
  do {
    const page = await env.REGISTRY_R2.list(r2Cursor ? { cursor: r2Cursor } : {});
    for (const object of page.objects) out.push(`r2:${object.key} ${object.etag}`);
    r2Cursor = page.truncated ? page.cursor : undefined;
  } while (r2Cursor);
  return out.sort();
}
