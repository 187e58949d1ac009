import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { address, countingKv, fakeRelease, getWith, seed } from './helpers';
import { publishVersion } from '../../src/store/providers/write';
import { DocumentCache } from '../../src/store/document-cache';
import { StoredDocument } from '../../src/store/stored-body';

const provider = address('acme', 'cached');

beforeAll(async () => {
  await seed([fakeRelease(provider, '1.0.0')]);
});

describe('KV reads per request', () => {
  it('discovery reads nothing; a metadata route reads one value once, then none while cached', async () => {
    const { kv, reads } = countingKv();
    await getWith({ REGISTRY_KV: kv }, '/.well-known/terraform.json');
    expect(reads()).toBe(0);
    for (const path of [
      '/v1/providers/acme/cached/versions',
      '/v1/providers/acme/cached/1.0.0/download/linux/amd64',
      '/v1/mirror/registry.example.com/acme/cached/index.json',
      '/v1/mirror/registry.example.com/acme/cached/1.0.0.json',
    ]) {
      const before = reads();
      expect((await getWith({ REGISTRY_KV: kv }, path)).status, path).toBe(200);
      expect(reads() - before, path).toBe(1);
      expect((await getWith({ REGISTRY_KV: kv }, path)).status, path).toBe(200);
      expect(reads() - before, `${path} again`).toBe(1);
    }
  });

  it('reads no KV to stream a release file', async () => {
    const { kv, reads } = countingKv();
    const response = await getWith({ REGISTRY_KV: kv }, '/v1/archives/registry.example.com/acme/cached/1.0.0/terraform-provider-cached_1.0.0_linux_amd64.zip');
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(reads()).toBe(0);
  });
});

describe('freshness', () => {
  it('lists a newly published version once the list cache lifetime has passed (0 s here)', async () => {
    const path = '/v1/providers/acme/fresh/versions';
    const fresh = address('acme', 'fresh');
    await seed([fakeRelease(fresh, '1.0.0')]);
    expect((await (await getWith({ INDEX_CACHE_SECONDS: '0' }, path)).json<{ versions: unknown[] }>()).versions).toHaveLength(1);
    const { record, files } = fakeRelease(fresh, '1.1.0');
    await publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, record, files);
    expect((await (await getWith({ INDEX_CACHE_SECONDS: '0' }, path)).json<{ versions: unknown[] }>()).versions).toHaveLength(2);
  });
});

describe('DocumentCache', () => {
  it('expires mutable entries after their lifetime and keeps immutable ones', () => {
    const cache = new DocumentCache(1024 * 1024);
    cache.set('list', new StoredDocument('a'), 5000, 0);
    cache.set('doc', new StoredDocument('b'), Number.POSITIVE_INFINITY, 0);
    cache.set('absent', null, 5000, 0);
    expect(cache.get('list', 4999)?.text).toBe('a');
    expect(cache.get('absent', 4999)).toBeNull();
    expect(cache.get('list', 5000)).toBeUndefined();
    expect(cache.get('absent', 5000)).toBeUndefined();
    expect(cache.get('doc', 10 ** 12)?.text).toBe('b');
  });

  it('stays within its byte budget by evicting the least recently used', () => {
    const cache = new DocumentCache(20_000);
    for (let i = 0; i < 100; i++) {
      cache.set(`k${i}`, new StoredDocument('x'.repeat(1000)), Number.POSITIVE_INFINITY, 0);
      if (i > 0) cache.get('k0', 0); // keep k0 recently used
    }
    expect(cache.size).toBeLessThanOrEqual(6); // 20,000 bytes ÷ ~3,070 per 1,000-character document
    expect(cache.get('k0', 0)?.text).toBe('x'.repeat(1000));
    expect(cache.get('k1', 0)).toBeUndefined();
    expect(cache.get('k99', 0)?.text).toBe('x'.repeat(1000));
  });
});
