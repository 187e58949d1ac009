import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { mapLimit } from '../../src/concurrency';
import { committedRecordKey, providerIndexKey, providerLeaseName, versionRecordKey, versionsDocumentKey } from '../../src/store/layout';
import { VersionConflictError } from '../../src/store/errors';
import { withLease } from '../../src/store/lease';
import { beginProviderPublish, publishVersion, rebuildProviderIndex } from '../../src/store/providers/write';
import type { PublishProgress } from '../../src/store/records';
import { commitRecord } from '../../src/store/records';
import type { BlobStore, KvStore } from '../../src/store/store';
import type { VersionRecord } from '../../src/store/types';
import { countingStore, type StoreRequest } from '../fixtures/counting-store';
import { address, fakeRelease } from './helpers';

/**
 * What one provider publish costs in storage requests, counted on the real
 * (Miniflare) KV and R2 bindings: the same flow as `publish-provider` under
 * its lease (take the lease, read the provider's index and the version's
 * record once each, decide, write). The cost must not grow with the
 * provider's history, and no stored object may be read twice before the
 * publish decides what to write.
 */

const store = { kv: env.REGISTRY_KV as unknown as KvStore, blobs: env.REGISTRY_R2 as unknown as BlobStore };
const OWNER = { host: 'test', pid: 1, processStartedAt: '2026-11-23T00:00:00.000Z', purpose: 'publish-cost test' };
const SIZES = [1, 100, 1000];

/** `count` committed versions, written as a publish leaves them (R2 records), then the lists built once from them by the store's repair path. */
async function seedVersions(type: string, count: number) {
  const provider = address('cost', type);
  const template = fakeRelease(provider, '0.0.0', ['linux_amd64', 'darwin_arm64', 'windows_amd64'], { archiveSize: 1 }).record;
  const versions = Array.from({ length: count }, (_, i) => `0.${Math.floor(i / 100)}.${i % 100}`);
  await mapLimit(versions, 50, (version) =>
    commitRecord(store.blobs, committedRecordKey(provider, version), {
      ...template,
      version,
      packages: template.packages.map((p) => ({ ...p, filename: p.filename.replace('_0.0.0_', `_${version}_`) })),
    } satisfies VersionRecord),
  );
  await rebuildProviderIndex(store, provider, () => {});
  return provider;
}

/** Publishes `version` of `provider` as publish-provider does under its lease; returns every storage request it made. */
async function countedPublish(provider: ReturnType<typeof address>, version: string, progress: PublishProgress = () => {}) {
  const counted = countingStore(store);
  const release = fakeRelease(provider, version);
  const outcome = await withLease(counted.blobs, providerLeaseName(provider), { owner: OWNER, ttlMs: 600_000 }, async (lease) => {
    const start = await beginProviderPublish(counted, provider, version, progress, () => lease.check());
    return publishVersion(counted, release.record, release.files, progress, { lease, existing: start.existing, lists: start.lists });
  });
  return { outcome, requests: [...counted.counter.requests] };
}

const isRead = (r: StoreRequest) => r.op === 'kv.get' || r.op === 'r2.get' || r.op === 'r2.head';
const isWrite = (r: StoreRequest) => r.op.endsWith('.put') || r.op.endsWith('.delete');
const lease = (r: StoreRequest) => r.key.startsWith('.leases/');
const listed = async (provider: ReturnType<typeof address>) =>
  (JSON.parse((await store.kv.get(versionsDocumentKey(provider), 'text'))!) as { versions: { version: string }[] }).versions.map((v) => v.version);

describe('a provider publish', () => {
  const runs = new Map<number, StoreRequest[]>();

  beforeAll(async () => {
    for (const size of SIZES) {
      const provider = await seedVersions(`size${size}x`, size);
      const { outcome, requests } = await countedPublish(provider, '1.0.0');
      expect(outcome).toBe('published');
      expect(await listed(provider)).toHaveLength(size + 1);
      runs.set(size, requests);
    }
  }, 240_000);

  it('makes the same storage requests with 1, 100 and 1,000 existing versions', () => {
    const shape = (requests: StoreRequest[]) => requests.map((r) => `${r.op} ${r.key.replace(/size\d+x/g, 'TYPE')}`);
    const [one, hundred, thousand] = SIZES.map((size) => runs.get(size)!);
    expect(one!.length).toBeGreaterThan(0);
    expect(shape(hundred!)).toEqual(shape(one!));
    expect(shape(thousand!)).toEqual(shape(one!));
    // Constant and small: no request per existing version.
    expect(thousand!.length).toBeLessThan(40);
  });

  it('reads each stored object at most once before deciding what to write, and gets none twice', () => {
    for (const [size, requests] of runs) {
      const firstWrite = requests.findIndex((r) => isWrite(r) && !lease(r));
      const beforeDeciding = requests
        .slice(0, firstWrite)
        .filter(isRead)
        .map((r) => r.key);
      expect(new Set(beforeDeciding).size, `${size}: ${beforeDeciding.join(', ')}`).toBe(beforeDeciding.length);
      const gets = requests.filter((r) => r.op === 'kv.get' || r.op === 'r2.get').map((r) => r.key);
      expect(new Set(gets).size, `${size}: ${gets.join(', ')}`).toBe(gets.length);
      // The version's record and the provider's index are among what it read before deciding.
      expect(beforeDeciding).toEqual(
        expect.arrayContaining([committedRecordKey(address('cost', `size${size}x`), '1.0.0'), providerIndexKey(address('cost', `size${size}x`))]),
      );
    }
  });
});

describe('the index is repaired from the records', () => {
  it('a version committed but not yet in the index (a publish killed after its commit) is listed by a re-run', async () => {
    const provider = await seedVersions('crashed', 3);
    const release = fakeRelease(provider, '2.0.0');
    await publishVersion(store, release.record, release.files, () => {}, { rebuildIndex: false });
    expect(await listed(provider)).not.toContain('2.0.0');
    const { outcome } = await countedPublish(provider, '2.0.0');
    expect(outcome).toBe('unchanged');
    expect(await listed(provider)).toEqual(['0.0.0', '0.0.1', '0.0.2', '2.0.0']);
  });

  it('a missing or damaged index is rebuilt from the records by the next publish, which says so', async () => {
    const provider = await seedVersions('lost', 2);
    await store.blobs.delete(providerIndexKey(provider));
    await countedPublish(provider, '1.0.0');
    expect(await listed(provider)).toEqual(['0.0.0', '0.0.1', '1.0.0']);

    await store.blobs.put(providerIndexKey(provider), '{"format": 1, "versions": [');
    const events: string[] = [];
    await countedPublish(provider, '1.1.0', (e) => events.push(`${e.step}: ${e.detail}`));
    expect(events).toContain(`warning: ${providerIndexKey(provider)} is damaged (not JSON); rebuilding it from the version records`);
    expect(await listed(provider)).toEqual(['0.0.0', '0.0.1', '1.0.0', '1.1.0']);
  });

  it('records kept only in KV (a state from before R2 records) are moved to R2, their KV copies deleted, and stay listed', async () => {
    const provider = address('cost', 'legacy');
    const old = fakeRelease(provider, '0.9.0').record;
    await store.kv.put(versionRecordKey(provider, '0.9.0'), JSON.stringify(old));
    // A re-publish of that version with other bytes is refused: the migration runs before the publish decides.
    const other = fakeRelease(provider, '0.9.0', undefined, { salt: 'other' });
    await expect(
      withLease(store.blobs, providerLeaseName(provider), { owner: OWNER }, async () => {
        const start = await beginProviderPublish(store, provider, '0.9.0');
        return publishVersion(store, other.record, other.files, () => {}, { existing: start.existing, lists: start.lists });
      }),
    ).rejects.toBeInstanceOf(VersionConflictError);
    expect(JSON.parse(await (await store.blobs.get(committedRecordKey(provider, '0.9.0')))!.text()).packages).toEqual(old.packages);
    expect(await store.kv.get(versionRecordKey(provider, '0.9.0'), 'text')).toBeNull();
    await countedPublish(provider, '1.0.0');
    expect(await listed(provider)).toEqual(['0.9.0', '1.0.0']);
  });
});
