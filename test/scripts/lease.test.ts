import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processLeaseOptions } from '../../scripts/lib/stores/lease';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { type StoreHandle } from '../../scripts/lib/stores/handle';
import { leaseObjectKey } from '../../src/store/layout';
import { acquireLease, withLease, type LeaseState } from '../../src/store/lease';
import { LeaseBusyError, LeaseLostError } from '../../src/store/errors';
import type { BlobStore } from '../../src/store/store';
import { tempDir } from './helpers';

// Leases on the real local R2 (Miniflare), as publish-provider takes them.
const temp = tempDir('lease');
let store: StoreHandle;

beforeAll(async () => {
  store = await openLocalStore({ localPersistRoot: join(temp.dir, 'v3'), kvNamespaceId: 'kv', bucketName: 'bucket' });
});
afterAll(async () => {
  await store?.close();
  temp.cleanup();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The real store, except that the first `parties` reads of `key` wait for one another, so that
 * many acquirers act on the same read: the race the conditional writes must settle.
 */
function sameReadFor(blobs: BlobStore, key: string, parties: number): BlobStore {
  const waiting: (() => void)[] = [];
  return {
    head: (k) => blobs.head(k),
    list: (options) => blobs.list(options),
    delete: (k) => blobs.delete(k),
    put: (k, value, options) => blobs.put(k, value, options),
    async get(k) {
      const object = await blobs.get(k);
      if (k === key && waiting.length < parties) {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length === parties) for (const release of waiting) release();
        });
      }
      return object;
    },
  };
}

/** The real store, except that writes of `key` hang while `stalled` is set (a store that stops answering). */
function stallingWrites(blobs: BlobStore, key: string): { blobs: BlobStore; stall(): void; resume(): void } {
  let gate: Promise<void> | null = null;
  let open = () => {};
  return {
    blobs: {
      head: (k) => blobs.head(k),
      get: (k) => blobs.get(k),
      list: (options) => blobs.list(options),
      delete: (k) => blobs.delete(k),
      async put(k, value, options) {
        if (k === key && gate) await gate;
        return blobs.put(k, value, options);
      },
    },
    stall() {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    resume() {
      gate = null;
      open();
    },
  };
}

/** A pid that no process has here now (a process that just exited). */
const deadPid = () => spawnSync('true').pid!;

function storedLease(name: string, overrides: Omit<Partial<LeaseState>, 'owner'> & { owner?: Partial<LeaseState['owner']> }): string {
  const now = Date.now();
  return JSON.stringify({
    name,
    token: 'someone-else',
    acquiredAt: new Date(now - 60_000).toISOString(),
    renewedAt: new Date(now - 1000).toISOString(),
    expiresAt: now + 30_000,
    released: false,
    ...overrides,
    owner: { host: 'ci-runner-7', pid: 4242, processStartedAt: new Date(now - 120_000).toISOString(), purpose: 'publish-provider x 1.0.0', ...overrides.owner },
  });
}

describe('provider leases', () => {
  it('lets exactly one of many concurrent holders in at a time, and every one gets its turn', async () => {
    let inside = 0;
    let maxInside = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        withLease(store.blobs, 'test/exclusive', processLeaseOptions(`holder ${i}`), async (lease) => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          await sleep(30);
          lease.check();
          order.push(i);
          inside--;
        }),
      ),
    );
    expect(maxInside).toBe(1);
    expect(order.sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('a waiter says who holds the lease and since when, and gets it as soon as it is released', async () => {
    const held = await acquireLease(store.blobs, 'test/wait', processLeaseOptions('publish-provider registry.example.com/acme/widget 1.0.0'));
    const lines: string[] = [];
    const waiting = acquireLease(
      store.blobs,
      'test/wait',
      processLeaseOptions('second', (line) => lines.push(line)),
    );
    await sleep(600);
    expect(lines.join('\n')).toMatch(
      new RegExp(
        `waiting for publish-provider registry\\.example\\.com/acme/widget 1\\.0\\.0 \\(host ${hostname()}, pid ${process.pid}\\) since \\d{4}-\\d\\d-\\d\\dT`,
      ),
    );
    const started = Date.now();
    await held.release();
    const second = await waiting;
    expect(Date.now() - started).toBeLessThan(2000);
    await second.release();
  });

  it('takes over at once the lease of a dead process on this host, with a message', async () => {
    const dead = spawnSync('true').pid!;
    await store.blobs.put(leaseObjectKey('test/dead'), storedLease('test/dead', { owner: { host: hostname(), pid: dead } }));
    const lines: string[] = [];
    const started = Date.now();
    const lease = await acquireLease(
      store.blobs,
      'test/dead',
      processLeaseOptions('next', (line) => lines.push(line)),
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(lines.join('\n')).toMatch(new RegExp(`took over the lease test/dead from .*pid ${dead}.*: process ${dead} on ${hostname()} is gone`));
    await lease.release();
  });

  it('takes over an expired lease of another host, and a damaged one, with a message', async () => {
    await store.blobs.put(leaseObjectKey('test/expired'), storedLease('test/expired', { expiresAt: Date.now() - 5000 }));
    const lines: string[] = [];
    // A bounded wait: a lease that is wrongly kept fails here instead of waiting 15 minutes.
    const lease = await acquireLease(
      store.blobs,
      'test/expired',
      processLeaseOptions('next', (line) => lines.push(line), { maxWaitMs: 5000 }),
    );
    expect(lines.join('\n')).toMatch(
      /took over the lease test\/expired from publish-provider x 1\.0\.0 \(host ci-runner-7, pid 4242\) since .*: expired \d+ s ago/,
    );
    await lease.release();

    await store.blobs.put(leaseObjectKey('test/damaged'), '');
    const damaged: string[] = [];
    const second = await acquireLease(
      store.blobs,
      'test/damaged',
      processLeaseOptions('next', (line) => damaged.push(line)),
    );
    expect(damaged.join('\n')).toMatch(/took over the lease test\/damaged: its lease object is unreadable/);
    await second.release();
  });

  it('waits for a live lease of another host until it expires, and gives up after maxWaitMs naming the holder', async () => {
    // Its pid does not exist here, which says nothing about a process on another host.
    await store.blobs.put(leaseObjectKey('test/busy'), storedLease('test/busy', { expiresAt: Date.now() + 60_000, owner: { pid: deadPid() } }));
    await expect(acquireLease(store.blobs, 'test/busy', processLeaseOptions('next', undefined, { maxWaitMs: 500 }))).rejects.toThrow(LeaseBusyError);
    await expect(acquireLease(store.blobs, 'test/busy', processLeaseOptions('next', undefined, { maxWaitMs: 500 }))).rejects.toThrow(
      /test\/busy is being written by publish-provider x 1\.0\.0 \(host ci-runner-7, pid \d+\) since/,
    );
    await store.blobs.put(leaseObjectKey('test/busy'), storedLease('test/busy', { expiresAt: Date.now() + 800 }));
    const lease = await acquireLease(store.blobs, 'test/busy', processLeaseOptions('next', undefined, { maxWaitMs: 5000 }));
    await lease.release();
  });

  it('does not take over a live lease that expires sooner than its own lifetime (its holder is about to renew)', async () => {
    await store.blobs.put(leaseObjectKey('test/soon'), storedLease('test/soon', { expiresAt: Date.now() + 10_000 }));
    await expect(acquireLease(store.blobs, 'test/soon', processLeaseOptions('next', undefined, { ttlMs: 30_000, maxWaitMs: 500 }))).rejects.toThrow(
      LeaseBusyError,
    );
  });

  it('of two acquirers that both find no lease, exactly one creates it (If-None-Match: *); the other waits', async () => {
    const blobs = sameReadFor(store.blobs, leaseObjectKey('test/create-race'), 2);
    const results = await Promise.allSettled(
      [0, 1].map((i) => acquireLease(blobs, 'test/create-race', processLeaseOptions(`creator ${i}`, undefined, { maxWaitMs: 800 }))),
    );
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: expect.any(LeaseBusyError) });
    for (const r of results) if (r.status === 'fulfilled') await r.value.release();
  });

  it('of two waiters that both read the same expired lease, exactly one takes it over (If-Match); the other waits', async () => {
    await store.blobs.put(leaseObjectKey('test/takeover-race'), storedLease('test/takeover-race', { expiresAt: Date.now() - 5000 }));
    const blobs = sameReadFor(store.blobs, leaseObjectKey('test/takeover-race'), 2);
    const results = await Promise.allSettled(
      [0, 1].map((i) => acquireLease(blobs, 'test/takeover-race', processLeaseOptions(`waiter ${i}`, undefined, { maxWaitMs: 800 }))),
    );
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: expect.any(LeaseBusyError) });
    for (const r of results) if (r.status === 'fulfilled') await r.value.release();
  });

  it('a holder whose renewal hangs past the expiry learns from check() that the lease expired', async () => {
    const stalling = stallingWrites(store.blobs, leaseObjectKey('test/stalled'));
    const lease = await acquireLease(stalling.blobs, 'test/stalled', processLeaseOptions('stalled', undefined, { ttlMs: 1000 }));
    expect(() => lease.check()).not.toThrow();
    stalling.stall();
    await sleep(1300); // past the expiry; the renewal started at 1 s is still waiting for the store
    expect(() => lease.check()).toThrow(/lost the lease test\/stalled \(it expired before it could be renewed\)/);
    stalling.resume();
    await lease.release();
  });

  it('a holder whose lease was taken over learns it from check() and stops', async () => {
    const first = await acquireLease(store.blobs, 'test/lost', processLeaseOptions('first', undefined, { ttlMs: 1000 }));
    // Someone judges the first owner dead (e.g. it was paused past its expiry) and takes over.
    const second = await acquireLease(store.blobs, 'test/lost', processLeaseOptions('second', undefined, { ownerIsGone: () => true }));
    await sleep(1500); // the first holder's next renewal finds the lease changed
    expect(() => first.check()).toThrow(LeaseLostError);
    expect(() => first.check()).toThrow(/lost the lease test\/lost \(another writer took it over\); stopped before writing more — run the command again/);
    expect(() => second.check()).not.toThrow();
    await first.release();
    await second.release();
  });
});
