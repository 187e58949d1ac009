import { forgetTokenRecords } from '../../src/store/tokens/cached-read';
import { beforeAll, describe, expect, it } from 'vitest';
import { signatureQuery } from '../../src/access/signed-urls';
import { edgeCacheUrl } from '../../src/store/edge-cache';
import { forgetIsolateDocuments } from '../../src/store/read-document';
import { downloadDocumentKey, releaseObjectKey } from '../../src/store/layout';
import { address, bearer, countingKv, env, errorsOf, fakeRelease, issueToken, ORIGIN, seed } from './helpers';
import { countingR2, evict, send } from '../worker/serving';
import { settings } from '../../src/config';

// Private mode and the location's edge cache: entries are keyed by the stored
// object, filled only after the signature or token was accepted, and a hit
// still needs a valid signature or token.

const provider = address('edgepriv', 'thing');
const filename = 'terraform-provider-thing_1.0.0_linux_amd64.zip';
const path = `/v1/archives/registry.example.com/edgepriv/thing/1.0.0/${filename}`;
const key = releaseObjectKey(provider, '1.0.0', filename);
const download = '/v1/providers/edgepriv/thing/1.0.0/download/linux/amd64';

const signed = async (p: string, expires = Math.floor(Date.now() / 1000) + 600) => `${p}?${await signatureQuery(settings(env), p, expires)}`;
const cached = async () => (await caches.default.match(edgeCacheUrl(ORIGIN, 'r2', key))) !== undefined;

let token: string;

beforeAll(async () => {
  await seed([fakeRelease(provider, '1.0.0', ['linux_amd64'])]);
  ({ token } = await issueToken(['edgepriv']));
});

describe('release files in the edge cache, private mode', () => {
  it('stores nothing for a request whose signature is refused', async () => {
    await evict('r2', key);
    const good = new URL(await signed(path), ORIGIN);
    const tampered = `${path}?expires=${good.searchParams.get('expires')}&signature=${'A'.repeat(43)}`;
    for (const url of [path, tampered, await signed(path, Math.floor(Date.now() / 1000) - 1)]) {
      const { response, settled } = await send(url);
      expect(response.status, url).toBe(403);
      await settled();
    }
    expect(await cached()).toBe(false);
  });

  it('refuses a cached archive without a valid signature, and serves it from the cache with one', async () => {
    const { r2, reads } = countingR2();
    const first = await send(await signed(path), {}, { REGISTRY_R2: r2 });
    expect(first.response.status).toBe(200);
    await first.response.arrayBuffer();
    await first.settled();
    expect(reads()).toBe(1);
    expect(await cached()).toBe(true);

    const good = new URL(await signed(path), ORIGIN);
    const otherFile = await signed(`/v1/archives/registry.example.com/edgepriv/thing/1.0.0/terraform-provider-thing_1.0.0_SHA256SUMS`);
    for (const [url, init] of [
      [path, {}],
      [path, bearer(token)],
      [`${path}?expires=${good.searchParams.get('expires')}&signature=${'A'.repeat(43)}`, {}],
      [`${path}?expires=${Number(good.searchParams.get('expires')) + 1}&signature=${good.searchParams.get('signature')}`, {}],
      [await signed(path, Math.floor(Date.now() / 1000) - 1), {}],
      [`${path}${otherFile.slice(otherFile.indexOf('?'))}`, {}],
    ] as const) {
      for (const method of ['GET', 'HEAD']) {
        const { response } = await send(url, { method, ...init }, { REGISTRY_R2: r2 });
        expect(response.status, `${method} ${url}`).toBe(403);
        await response.arrayBuffer();
      }
    }

    const hit = await send(await signed(path), {}, { REGISTRY_R2: r2 });
    expect(hit.response.status).toBe(200);
    expect(hit.response.headers.get('cache-control')).toMatch(/^private, max-age=\d+$/);
    await hit.response.arrayBuffer();
    const ranged = await send(await signed(path), { headers: { range: 'bytes=0-9' } }, { REGISTRY_R2: r2 });
    expect(ranged.response.status).toBe(206);
    await ranged.response.arrayBuffer();
    expect(reads()).toBe(1);
  });
});

describe('documents in the edge cache, private mode', () => {
  it('a cached download document still needs a valid token, and is served signed for each request', async () => {
    const { kv, reads } = countingKv();
    forgetIsolateDocuments();
    const first = await send(download, bearer(token), { REGISTRY_KV: kv });
    expect(first.response.status).toBe(200);
    await first.response.arrayBuffer();
    await first.settled();
    expect(reads()).toBe(2); // the token, the document
    expect(await caches.default.match(edgeCacheUrl(ORIGIN, 'kv', downloadDocumentKey(provider, '1.0.0', { os: 'linux', arch: 'amd64' })))).toBeDefined();

    // A fresh isolate: neither the document nor the token's record kept (src/store/tokens/cached-read.ts).
    forgetIsolateDocuments();
    forgetTokenRecords();
    for (const init of [{}, bearer('ert_not-a-real-token'), bearer(`${token}x`)]) {
      const { response } = await send(download, init, { REGISTRY_KV: kv });
      expect(response.status).toBe(401);
      expect((await errorsOf(response))[0]).toMatch(/token|credential|authori/i);
    }
    const before = reads();
    const hit = await send(download, bearer(token), { REGISTRY_KV: kv });
    expect(hit.response.status).toBe(200);
    expect(hit.response.headers.get('cache-control')).toBe('private, no-store');
    const body = await hit.response.json<{ download_url: string }>();
    expect(body.download_url).toMatch(/\?expires=\d+&signature=[A-Za-z0-9_-]{43}$/);
    expect(reads() - before).toBe(1); // the token only (the document from the edge cache)
  });
});
