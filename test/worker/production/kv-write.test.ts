import { describe, expect, it } from 'vitest';
import { KV_WRITE_BACKOFF_MS, putHotKey } from '../../../src/store/kv-write';
import { KV_WRITE_RATE_ERROR } from '../../fixtures/production/rules';
import { production } from './scenario';

// putHotKey against the harness's one-write-a-second rule (on Miniflare's real KV); its sleeps move the
// harness clock instead of waiting.

describe('putHotKey', () => {
  it('retries a write KV refused for the one-write-a-second rule, after a backoff', async () => {
    const p = production();
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
      p.clock.advance(ms);
    };
    await p.run('A', (env) => env.REGISTRY_KV.put('hot/key', 'first'));
    expect(await p.run('B', (env) => putHotKey(env.REGISTRY_KV, 'hot/key', 'second', { sleep }))).toBe(true);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(KV_WRITE_BACKOFF_MS[0]);
    expect(p.kv.refusedWrites.get('hot/key')).toBe(1);
    expect(await p.run('B', (env) => env.REGISTRY_KV.get('hot/key', 'text'))).toBe('second');
  });

  it('drops a write whose body is superseded instead of retrying it', async () => {
    const p = production();
    await p.run('A', (env) => env.REGISTRY_KV.put('hot/key2', 'newer'));
    const dropped = await p.run('B', (env) =>
      putHotKey(env.REGISTRY_KV, 'hot/key2', 'older', { superseded: async () => true, sleep: async (ms) => p.clock.advance(ms) }),
    );
    expect(dropped).toBe(false);
    expect(await p.run('A', (env) => env.REGISTRY_KV.get('hot/key2', 'text'))).toBe('newer');
  });

  it('gives up with KV’s error after the last retry, and passes any other error on at once', async () => {
    const p = production();
    await p.run('A', (env) => env.REGISTRY_KV.put('hot/key3', 'x'));
    let sleeps = 0;
    const never = p.run('B', (env) => putHotKey(env.REGISTRY_KV, 'hot/key3', 'y', { sleep: async () => void sleeps++ }));
    await expect(never).rejects.toThrow(KV_WRITE_RATE_ERROR);
    expect(sleeps).toBe(KV_WRITE_BACKOFF_MS.length);
    // Miniflare's real binding refuses a key over 512 bytes (414): not retried.
    const long = `hot/${'k'.repeat(600)}`;
    await expect(p.run('B', (env) => putHotKey(env.REGISTRY_KV, long, 'v', { sleep: async () => void sleeps++ }))).rejects.toThrow(/414|key length/);
    expect(sleeps).toBe(KV_WRITE_BACKOFF_MS.length);
  });
});
