import { describe, expect, it } from 'vitest';
import { env } from 'cloudflare:workers';
import { Invocation } from '../../fixtures/production/invocation';
import {
  KV_MAX_KEY_BYTES,
  KV_MAX_VALUE_BYTES,
  KV_WRITE_RATE_ERROR,
  kvKeyTooLong,
  kvValueTooLarge,
  MAX_OPEN_CONNECTIONS,
  TOO_MANY_STORAGE_OPERATIONS,
  TOO_MANY_SUBREQUESTS,
} from '../../fixtures/production/rules';
import { at, production } from './scenario';

// The harness's own rules, each shown to bite on Miniflare's real bindings (docs/production-rules.md).

describe('the production harness', () => {
  it('keeps a read per location, found or not, for cacheTtl; a write is seen where it was made at once, elsewhere when the copy expires', async () => {
    const p = production();
    const read = (location: string) => p.run(location, (env) => env.REGISTRY_KV.get('harness/key', 'text'));
    expect(await read('A')).toBeNull();
    expect(await read('B')).toBeNull();
    await p.run('A', (env) => env.REGISTRY_KV.put('harness/key', 'one'));
    expect(await read('A')).toBe('one');
    expect(await read('B')).toBeNull(); // B's cached "not found"
    p.clock.advance(59_000);
    expect(await read('B')).toBeNull();
    p.clock.advance(1_000);
    expect(await read('B')).toBe('one');
    expect(await read('C')).toBe('one'); // a location that never read it reads the central store
    // cacheTtl is set per read (when the copy is taken) and is at least 30 s.
    p.clock.advance(2_000);
    await p.run('A', (env) => env.REGISTRY_KV.put('harness/key', 'two'));
    const short = (location: string) => p.run(location, (env) => env.REGISTRY_KV.get('harness/key', { type: 'text', cacheTtl: 5 }));
    p.clock.advance(57_000);
    expect(await short('B')).toBe('one'); // B's copy from 59 s ago (default 60 s)
    p.clock.advance(1_000);
    expect(await short('B')).toBe('two'); // a fresh copy, kept 30 s (5 s asked, 30 s the floor)
    await p.run('A', (env) => env.REGISTRY_KV.put('harness/key', 'three'));
    p.clock.advance(29_000);
    expect(await short('B')).toBe('two');
    p.clock.advance(1_000);
    expect(await short('B')).toBe('three');
  });

  it('refuses a second write of a key within a second, from any location, as the binding does', async () => {
    const p = production();
    await p.run('A', (env) => env.REGISTRY_KV.put('harness/hot', '1'));
    await expect(p.run('B', (env) => env.REGISTRY_KV.put('harness/hot', '2'))).rejects.toThrow(KV_WRITE_RATE_ERROR);
    await expect(p.run('A', (env) => env.REGISTRY_KV.delete('harness/hot'))).rejects.toThrow(/429 Too Many Requests/);
    await p.run('A', (env) => env.REGISTRY_KV.put('harness/other', '1')); // other keys are not limited
    p.clock.advance(1_000);
    await p.run('B', (env) => env.REGISTRY_KV.put('harness/hot', '2'));
    expect(p.kv.refusedWrites.get('harness/hot')).toBe(2);
    expect(await p.run('B', (env) => env.REGISTRY_KV.get('harness/hot', 'text'))).toBe('2');
  });

  it('fails the 1,001st storage operation of an invocation (KV and R2 together)', async () => {
    const p = production({ plan: 'paid' });
    const error = await p
      .run('A', async (env) => {
        for (let i = 0; i < 600; i++) await env.REGISTRY_KV.get(`harness/many/${i}`, 'text');
        for (let i = 0; i < 401; i++) await env.REGISTRY_R2.head(`harness/many/${i}`);
      })
      .catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(TOO_MANY_STORAGE_OPERATIONS);
    const [record] = p.invocations;
    expect(record!.counts).toMatchObject({ kvReads: 600, r2ClassB: 401 });
    expect(record!.exceeded).toBe(TOO_MANY_STORAGE_OPERATIONS);
  });

  it('fails the 51st subrequest on Free, counts Cache API operations, and gives each location its own edge cache', async () => {
    const p = production();
    const error = await p
      .run('A', async () => {
        for (let i = 0; i < 51; i++) await fetch('http://127.0.0.1:9/').catch((e: Error) => (e.message === TOO_MANY_SUBREQUESTS ? Promise.reject(e) : null));
      })
      .catch((e: Error) => e);
    expect((error as Error).message).toBe(TOO_MANY_SUBREQUESTS);
    await p.run('A', () =>
      caches.default.put('https://registry.example.com/.edge-cache/kv/x', new Response('at A', { headers: { 'cache-control': 'max-age=600' } })),
    );
    expect(await p.run('A', async () => (await caches.default.match('https://registry.example.com/.edge-cache/kv/x'))?.text())).toBe('at A');
    expect(await p.run('B', async () => (await caches.default.match('https://registry.example.com/.edge-cache/kv/x'))?.text())).toBeUndefined();
    expect(p.invocations.slice(1).map((i) => [i.counts.cachePuts, i.counts.cacheMatches])).toEqual([
      [1, 0],
      [0, 1],
      [0, 1],
    ]);
  });

  it('runs the Worker per location and records each invocation', async () => {
    const p = production();
    expect((await at(p, 'A', '/.well-known/terraform.json')).status).toBe(200);
    expect(p.invocations.at(-1)).toMatchObject({ location: 'A', method: 'GET', path: '/.well-known/terraform.json', status: 200, exceeded: null });
  });

  it('refuses a KV key over 512 bytes and a value over 25 MiB with the binding errors, writing nothing', async () => {
    const p = production();
    const long = `harness/${'k'.repeat(KV_MAX_KEY_BYTES - 8 + 1)}`;
    const large = 'v'.repeat(KV_MAX_VALUE_BYTES + 1);
    // Miniflare's real binding refuses them with these messages; the harness refuses them alike, before the write.
    const real = env.REGISTRY_KV as unknown as KVNamespace;
    await expect(real.put(long, 'v')).rejects.toThrow(kvKeyTooLong(KV_MAX_KEY_BYTES + 1));
    await expect(real.put('harness/large', large)).rejects.toThrow(kvValueTooLarge(KV_MAX_VALUE_BYTES + 1));
    await expect(p.run('A', (e) => e.REGISTRY_KV.put(long, 'v'))).rejects.toThrow(kvKeyTooLong(KV_MAX_KEY_BYTES + 1));
    await expect(p.run('A', (e) => e.REGISTRY_KV.get(long, 'text'))).rejects.toThrow(kvKeyTooLong(KV_MAX_KEY_BYTES + 1, 'GET'));
    await expect(p.run('A', (e) => e.REGISTRY_KV.put('harness/large', large))).rejects.toThrow(kvValueTooLarge(KV_MAX_VALUE_BYTES + 1));
    // The largest key and value are taken; the refused put claimed no write (the key may be written at once).
    await p.run('A', (e) => e.REGISTRY_KV.put('harness/large', large.slice(1)));
    await p.run('A', (e) => e.REGISTRY_KV.put(long.slice(1), 'v'));
    expect(await real.get('harness/large', 'text')).toHaveLength(KV_MAX_VALUE_BYTES);
    expect(p.kv.refusedWrites.size).toBe(0);
  }, 60_000);

  it('keeps at most 6 fetches of an invocation waiting for headers; a 7th waits for the first to get its headers', async () => {
    const invocation = new Invocation('A', 'free');
    const answers: (() => void)[] = [];
    const started: number[] = [];
    const sends = Array.from({ length: 9 }, (_, i) =>
      invocation.connect(() => {
        started.push(i);
        return new Promise<number>((resolve) => answers.push(() => resolve(i)));
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    answers[2]!();
    expect(await sends[2]).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6]);
    for (let i = 0; i < 9; i++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      answers[i]?.();
    }
    expect(await Promise.all(sends)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(started).toHaveLength(9);
    expect(invocation.counts).toMatchObject({ connections: 9, queuedFetches: 3 });
    expect(MAX_OPEN_CONNECTIONS).toBe(6);
  });
});
