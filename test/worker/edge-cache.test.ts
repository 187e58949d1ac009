import { beforeAll, describe, expect, it } from 'vitest';
import { address, countingKv, fakeRelease, ORIGIN, seed, sha256HexOf } from './helpers';
import { countingR2, evict, send, warm } from './serving';
import { edgeCacheFor, edgeCacheUrl } from '../../src/store/edge-cache';
import { serveR2Object } from '../../src/http/r2-object';
import { forgetIsolateDocuments } from '../../src/store/read-document';
import { downloadDocumentKey, mirrorVersionKey, releaseObjectKey } from '../../src/store/layout';
import type { FakeRelease } from '../fixtures/release';

/**
 * The location's edge cache (Cache API): release files and immutable
 * documents are read from R2/KV once per location, then from the cache by
 * any isolate — here, a "fresh isolate" is one whose own document LRU was
 * forgotten. Lists never go there.
 */

const provider = address('acme', 'edgy');
const BIG = 9 * 1024 * 1024 + 3; // over the size up to which a miss tees R2's stream into the cache
let release!: FakeRelease;
let big!: FakeRelease;
const file = (name: string) => `/v1/archives/registry.example.com/acme/edgy/1.0.0/terraform-provider-edgy_1.0.0_${name}`;
const shasumOf = (r: FakeRelease, filename: string) => r.record.packages.find((p) => p.filename === filename)!.shasum;

beforeAll(async () => {
  release = (await seed([fakeRelease(provider, '1.0.0', ['linux_amd64', 'darwin_arm64'])]))[0]!;
  big = (await seed([fakeRelease(address('acme', 'edgybig'), '1.0.0', ['linux_amd64'], { archiveSize: BIG })]))[0]!;
}, 120_000);

describe('release files in the edge cache', () => {
  it('reads R2 once for the first GET in a location, then never (archive, SHA256SUMS, signature)', async () => {
    for (const name of ['linux_amd64.zip', 'SHA256SUMS', 'SHA256SUMS.sig']) {
      const { r2, reads } = countingR2();
      const { kv, reads: kvReads } = countingKv();
      const first = await send(file(name), {}, { REGISTRY_R2: r2, REGISTRY_KV: kv });
      expect(first.response.status, name).toBe(200);
      const firstBytes = new Uint8Array(await first.response.arrayBuffer());
      await first.settled();
      expect(reads(), `${name}: first`).toBe(1);
      for (let i = 0; i < 3; i++) {
        const later = await send(file(name), {}, { REGISTRY_R2: r2, REGISTRY_KV: kv });
        expect(later.response.status, name).toBe(200);
        expect(later.response.headers.get('content-length'), name).toBe(String(firstBytes.byteLength));
        expect(new Uint8Array(await later.response.arrayBuffer()), name).toEqual(firstBytes);
        await later.settled();
      }
      expect(reads(), `${name}: later`).toBe(1);
      expect(kvReads(), name).toBe(0);
    }
    const archive = await send(file('linux_amd64.zip'));
    expect(await sha256HexOf(archive.response)).toBe(shasumOf(release, 'terraform-provider-edgy_1.0.0_linux_amd64.zip'));
  });

  it('keys entries by the stored object, not the URL: a query string does not make another entry', async () => {
    const { r2, reads } = countingR2();
    await warm(file('darwin_arm64.zip'));
    const response = (await send(`${file('darwin_arm64.zip')}?x=1&expires=2&signature=abc`, {}, { REGISTRY_R2: r2 })).response;
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(reads()).toBe(0);
    const key = releaseObjectKey(provider, '1.0.0', 'terraform-provider-edgy_1.0.0_darwin_arm64.zip');
    expect(await caches.default.match(edgeCacheUrl(ORIGIN, 'r2', key))).toBeDefined();
  });

  it('serves a large archive from R2 and fills the cache with a second, background read; ranges then come from the cache', async () => {
    const path = '/v1/archives/registry.example.com/acme/edgybig/1.0.0/terraform-provider-edgybig_1.0.0_linux_amd64.zip';
    const { r2, reads } = countingR2();
    const first = await send(path, {}, { REGISTRY_R2: r2 });
    expect(first.response.status).toBe(200);
    expect(first.response.headers.get('content-length')).toBe(String(BIG));
    expect(await sha256HexOf(first.response)).toBe(shasumOf(big, 'terraform-provider-edgybig_1.0.0_linux_amd64.zip'));
    await first.settled();
    expect(reads()).toBe(2);
    const ranged = await send(path, { headers: { range: `bytes=${BIG - 100}-` } }, { REGISTRY_R2: r2 });
    expect(ranged.response.status).toBe(206);
    expect(ranged.response.headers.get('content-range')).toBe(`bytes ${BIG - 100}-${BIG - 1}/${BIG}`);
    expect(new Uint8Array(await ranged.response.arrayBuffer())).toEqual(big.bytes.get('terraform-provider-edgybig_1.0.0_linux_amd64.zip')!.slice(BIG - 100));
    const later = await send(path, {}, { REGISTRY_R2: r2 });
    expect(await sha256HexOf(later.response)).toBe(shasumOf(big, 'terraform-provider-edgybig_1.0.0_linux_amd64.zip'));
    expect(reads()).toBe(2);
  });

  it('streams objects over the cache size limit from R2 every time, never caching them', async () => {
    const filename = 'terraform-provider-edgy_1.0.0_linux_amd64.zip';
    const key = releaseObjectKey(provider, '1.0.0', filename);
    await evict('r2', key);
    const { r2, reads } = countingR2();
    for (let i = 1; i <= 3; i++) {
      const request = new Request(new URL(file('linux_amd64.zip'), ORIGIN));
      const ctx = { waitUntil: (p: Promise<unknown>) => pending.push(p), passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
      const pending: Promise<unknown>[] = [];
      const response = await serveR2Object(request, r2, key, {
        contentType: 'application/zip',
        cacheControl: 'public',
        missing: () => new Response(null, { status: 404 }),
        edgeCache: edgeCacheFor(request, ctx),
        edgeCacheMaxBytes: 1000,
      });
      expect(response.status).toBe(200);
      expect(await sha256HexOf(response)).toBe(shasumOf(release, filename));
      await Promise.all(pending);
      expect(pending).toHaveLength(0);
      expect(reads()).toBe(i);
    }
    expect(await caches.default.match(edgeCacheUrl(ORIGIN, 'r2', key))).toBeUndefined();
  });

  it('does not cache what is not there: a missing file stays a 404 and is found once published', async () => {
    const path = '/v1/archives/registry.example.com/acme/edgylate/1.0.0/terraform-provider-edgylate_1.0.0_linux_amd64.zip';
    const missing = await send(path);
    expect(missing.response.status).toBe(404);
    await missing.settled();
    await seed([fakeRelease(address('acme', 'edgylate'), '1.0.0', ['linux_amd64'])]);
    const found = await send(path);
    expect(found.response.status).toBe(200);
    await found.response.arrayBuffer();
  });
});

describe('documents in the edge cache', () => {
  const download = '/v1/providers/acme/edgy/1.0.0/download/linux/amd64';
  const mirrorVersion = '/v1/mirror/registry.example.com/acme/edgy/1.0.0.json';

  it('a download document and a mirror VERSION.json are read from KV once per location, then by any isolate from the cache', async () => {
    for (const path of [download, mirrorVersion]) {
      const { kv, reads } = countingKv();
      const { r2, reads: r2Reads } = countingR2();
      forgetIsolateDocuments();
      const first = await send(path, {}, { REGISTRY_KV: kv, REGISTRY_R2: r2 });
      expect(first.response.status, path).toBe(200);
      const body = await first.response.text();
      await first.settled();
      expect(reads(), `${path}: first`).toBe(1);
      for (let i = 0; i < 3; i++) {
        forgetIsolateDocuments(); // a fresh isolate of the same location
        const later = await send(path, {}, { REGISTRY_KV: kv, REGISTRY_R2: r2 });
        expect(later.response.status, path).toBe(200);
        expect(later.response.headers.get('cache-control'), path).toBe('public, max-age=31536000, immutable');
        expect(await later.response.text(), path).toBe(body);
      }
      expect(reads(), `${path}: later`).toBe(1);
      expect(r2Reads(), path).toBe(0);
    }
    expect(await caches.default.match(edgeCacheUrl(ORIGIN, 'kv', downloadDocumentKey(provider, '1.0.0', { os: 'linux', arch: 'amd64' })))).toBeDefined();
    expect(await caches.default.match(edgeCacheUrl(ORIGIN, 'kv', mirrorVersionKey(provider, '1.0.0')))).toBeDefined();
  });

  it('never caches lists or absences there: each fresh isolate reads KV for them', async () => {
    for (const path of [
      '/v1/providers/acme/edgy/versions',
      '/v1/mirror/registry.example.com/acme/edgy/index.json',
      '/v1/providers/acme/edgy/9.9.9/download/linux/amd64',
    ]) {
      const { kv, reads } = countingKv();
      for (let i = 1; i <= 3; i++) {
        forgetIsolateDocuments();
        const sent = await send(path, {}, { REGISTRY_KV: kv });
        await sent.response.arrayBuffer();
        await sent.settled();
        expect(reads(), path).toBe(i);
      }
    }
  });

  it('lists a version published after a miss', async () => {
    const late = address('acme', 'edgydoc');
    const path = '/v1/providers/acme/edgydoc/1.0.0/download/linux/amd64';
    forgetIsolateDocuments();
    const before = await send(path);
    expect(before.response.status).toBe(404);
    await before.settled();
    await seed([fakeRelease(late, '1.0.0', ['linux_amd64'])]);
    forgetIsolateDocuments();
    expect((await send(path)).response.status).toBe(200);
  });
});
