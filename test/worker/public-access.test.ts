import { beforeAll, describe, expect, it } from 'vitest';
import { IMMUTABLE } from '../../src/http/responses';
import { address, countingKv, fakeRelease, get, getWith, resolve, seed } from './helpers';

// Public mode (ACCESS = "public", as wrangler.toml's default environment):
// no tokens, plain cacheable URLs — private mode must not change any of it.

const provider = address('openly', 'thing');
const downloadPath = '/v1/providers/openly/thing/1.0.0/download/linux/amd64';
const mirrorPath = '/v1/mirror/registry.example.com/openly/thing/1.0.0.json';
const someToken = { headers: { authorization: `Bearer ert_${'z'.repeat(43)}` } };

beforeAll(async () => {
  await seed([fakeRelease(provider, '1.0.0', ['linux_amd64'])]);
});

describe('public mode', () => {
  it('serves metadata without a token, with shareable Cache-Control', async () => {
    const versions = await get('/v1/providers/openly/thing/versions');
    expect(versions.status).toBe(200);
    expect(versions.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    expect(versions.headers.get('www-authenticate')).toBeNull();
    const index = await get('/v1/mirror/registry.example.com/openly/thing/index.json');
    expect(index.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
  });

  it('keeps release-file URLs plain (no signature) and documents immutable', async () => {
    const download = await get(downloadPath);
    expect(download.headers.get('cache-control')).toBe(IMMUTABLE);
    const doc = await download.json<{ download_url: string; shasums_url: string; shasums_signature_url: string }>();
    // Absolute on the origin asked (Renovate fetches them as given), unsigned.
    for (const url of [doc.download_url, doc.shasums_url, doc.shasums_signature_url]) {
      expect(url).toMatch(/^https:\/\/registry\.example\.com\/v1\/archives\/[^?]+$/);
    }
    const mirror = await get(mirrorPath);
    expect(mirror.headers.get('cache-control')).toBe(IMMUTABLE);
    const body = await mirror.json<{ archives: Record<string, { url: string }> }>();
    expect(body.archives.linux_amd64!.url).not.toContain('?');
  });

  it('serves release files without a signature, immutable', async () => {
    const doc = await (await get(downloadPath)).json<{ download_url: string }>();
    const archive = await get(resolve(doc.download_url, downloadPath));
    expect(archive.status).toBe(200);
    expect(archive.headers.get('cache-control')).toBe(IMMUTABLE);
    await archive.arrayBuffer();
  });

  it('ignores an Authorization header: same answer, no token lookup in KV', async () => {
    for (const path of ['/v1/providers/openly/thing/versions', downloadPath, mirrorPath]) {
      const plain = await get(path);
      const withToken = await get(path, someToken);
      expect(withToken.status).toBe(200);
      expect(await withToken.text()).toBe(await plain.text());
      expect(withToken.headers.get('cache-control')).toBe(plain.headers.get('cache-control'));
    }
    const counted = countingKv();
    await (await getWith({ REGISTRY_KV: counted.kv }, '/v1/providers/openly/thing/versions', someToken)).text();
    await (await getWith({ REGISTRY_KV: counted.kv }, mirrorPath, someToken)).text();
    expect(counted.reads()).toBe(0); // both documents are in the isolate's cache already
  });

  it('ignores a bogus signature on a release file', async () => {
    const path = '/v1/archives/registry.example.com/openly/thing/1.0.0/terraform-provider-thing_1.0.0_linux_amd64.zip';
    const response = await get(`${path}?expires=1&signature=bogus`);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
  });
});
