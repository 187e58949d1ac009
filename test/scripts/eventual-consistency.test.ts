import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processLeaseOptions } from '../../scripts/lib/stores/lease';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { type StoreHandle } from '../../scripts/lib/stores/handle';
import { providerAddress } from '../../src/protocol/address';
import { committedRecordKey, mirrorIndexKey, mirrorVersionKey, providerLeaseName, versionsDocumentKey } from '../../src/store/layout';
import { withLease } from '../../src/store/lease';
import { publishVersion, rebuildProviderIndex } from '../../src/store/providers/write';
import { listVersionRecords } from '../../src/store/providers/version-records';
import { fakeRelease } from '../fixtures/release';
import { tempDir } from './helpers';
import { LaggingKv, type Write } from './lagging-kv';

const { dir, cleanup } = tempDir('lagging-kv');
// Longer than Cloudflare's 60 s, so a slow (loaded) run still has every other publisher's writes hidden at the end.
const LAG_MS = 10 * 60_000;
let store: StoreHandle;
beforeAll(async () => {
  store = await openLocalStore({ localPersistRoot: join(dir, 'v3'), kvNamespaceId: 'kv', bucketName: 'bucket' });
});
afterAll(async () => {
  await store?.close();
  cleanup();
});

describe('with KV eventually consistent between publishers', () => {
  it('concurrent publishes of different versions all end up listed, in the registry and the mirror', async () => {
    const address = providerAddress('registry.example.com', 'acme', 'lagged');
    const writes = new Map<string, Write>();
    const versions = ['1.0.0', '1.1.0', '1.2.0', '2.0.0'];
    await Promise.all(
      versions.map((version, writer) => {
        const kv = new LaggingKv(store.kv, writes, writer, LAG_MS);
        const release = fakeRelease(address, version);
        return withLease(store.blobs, providerLeaseName(address), processLeaseOptions(`publisher ${writer}`), (lease) =>
          publishVersion({ kv, blobs: store.blobs }, release.record, release.files, () => {}, { lease }),
        );
      }),
    );

    // The adapter really hides: a publisher's view does not list the others' KV documents.
    const view = new LaggingKv(store.kv, writes, 0, LAG_MS);
    const seen = (await view.list({ prefix: mirrorIndexKey(address).replace(/index\.json$/, '') })).keys
      .map((k) => k.name)
      .filter((k) => !k.endsWith('/index.json'));
    expect(seen).toEqual([mirrorVersionKey(address, '1.0.0')]);
    // So lists built from what KV shows would have dropped versions; the R2 records (and the index built from them) have them all.
    expect((await listVersionRecords({ kv: view, blobs: store.blobs }, address)).map((r) => r.version).sort()).toEqual(versions);

    const listed = JSON.parse((await store.kv.get(versionsDocumentKey(address), 'text'))!) as { versions: { version: string }[] };
    expect(listed.versions.map((v) => v.version)).toEqual(versions);
    const mirror = JSON.parse((await store.kv.get(mirrorIndexKey(address), 'text'))!) as { versions: object };
    expect(Object.keys(mirror.versions)).toEqual(versions);
  });

  it('a damaged version record is reported with its key and skipped; every other version stays listed', async () => {
    const address = providerAddress('registry.example.com', 'acme', 'damaged');
    for (const version of ['1.0.0', '1.1.0']) {
      const release = fakeRelease(address, version);
      await publishVersion(store, release.record, release.files);
    }
    await store.blobs.put(committedRecordKey(address, '1.2.0'), '{"version": "1.2.0", "packages": ');
    const events: string[] = [];
    await rebuildProviderIndex(store, address, (event) => events.push(`${event.step}: ${event.detail}`));
    expect(events).toContain(`warning: version record ${committedRecordKey(address, '1.2.0')} is damaged (not JSON); it was skipped`);
    const listed = JSON.parse((await store.kv.get(versionsDocumentKey(address), 'text'))!) as { versions: { version: string }[] };
    expect(listed.versions.map((v) => v.version)).toEqual(['1.0.0', '1.1.0']);
  });
});
