import { describe, expect, it } from 'vitest';
import { authenticate } from '../../src/access/tokens';
import { tokenKey } from '../../src/store/layout';
import { TOKEN_CACHE_MS, TOKEN_KV_CACHE_TTL_SECONDS } from '../../src/store/tokens/cached-read';
import { deleteTokenRecord } from '../../src/store/tokens/write';
import { env, issueToken } from './helpers';

// Read tokens kept by the isolate within the 60 s revocation bound (issue 38, docs/private.md). The KV here is
// Miniflare's real binding; a test's "another location revokes" is a KV delete that bypasses this isolate.

const request = (token: string) =>
  new Request('https://registry.example.com/v1/providers/acme/thing/versions', { headers: { authorization: `Bearer ${token}` } });

/** Counts the Worker's reads of KV by wrapping the real binding (each call passed on unchanged). */
function countingKv(): { kv: KVNamespace; reads: () => number } {
  let reads = 0;
  const kv = new Proxy(env.REGISTRY_KV, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (property === 'get') return (...args: unknown[]) => (reads++, (value as (...a: unknown[]) => unknown).apply(target, args));
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { kv, reads: () => reads };
}

describe('read tokens kept in the isolate', () => {
  it('a token seen once is accepted again without a KV read', async () => {
    const { token } = await issueToken(['acme']);
    const { kv, reads } = countingKv();
    const now = Date.now();
    expect((await authenticate(request(token), kv, now)).ok).toBe(true);
    expect(reads()).toBe(1);
    expect((await authenticate(request(token), kv, now + 1000)).ok).toBe(true);
    expect((await authenticate(request(token), kv, now + TOKEN_CACHE_MS - 1)).ok).toBe(true);
    expect(reads()).toBe(1);
  });

  it('revoked at another location: refused once the kept copy is 30 s old (with KV’s 30 s, within the 60 s bound)', async () => {
    expect(TOKEN_CACHE_MS / 1000 + TOKEN_KV_CACHE_TTL_SECONDS).toBeLessThanOrEqual(60);
    const { token, record } = await issueToken(['acme']);
    const now = Date.now();
    expect((await authenticate(request(token), env.REGISTRY_KV, now)).ok).toBe(true);
    await env.REGISTRY_KV.delete(tokenKey(record.sha256)); // as `npm run token revoke` does, from outside this isolate
    expect((await authenticate(request(token), env.REGISTRY_KV, now + TOKEN_CACHE_MS - 1)).ok).toBe(true);
    const refused = await authenticate(request(token), env.REGISTRY_KV, now + TOKEN_CACHE_MS);
    expect(refused).toMatchObject({ ok: false, error: 'invalid_token' });
  });

  it('revoked through this isolate: refused on the next request', async () => {
    const { token, record } = await issueToken(['acme']);
    const now = Date.now();
    expect((await authenticate(request(token), env.REGISTRY_KV, now)).ok).toBe(true);
    await deleteTokenRecord(env.REGISTRY_KV, record.sha256);
    expect((await authenticate(request(token), env.REGISTRY_KV, now + 1)).ok).toBe(false);
  });

  it("a kept record's own expiry still applies on every request", async () => {
    const now = Date.now();
    const { token } = await issueToken(['acme'], { expires: new Date(now + 10_000).toISOString() });
    expect((await authenticate(request(token), env.REGISTRY_KV, now)).ok).toBe(true);
    expect(await authenticate(request(token), env.REGISTRY_KV, now + 10_000)).toMatchObject({ ok: false, message: expect.stringContaining('expired') });
  });

  it('an unknown token is not kept: read each time, and accepted as soon as it exists', async () => {
    const { token, record } = await issueToken(['acme']);
    await env.REGISTRY_KV.delete(tokenKey(record.sha256));
    const { kv, reads } = countingKv();
    const now = Date.now();
    expect((await authenticate(request(token), kv, now)).ok).toBe(false);
    expect((await authenticate(request(token), kv, now + 1)).ok).toBe(false);
    expect(reads()).toBe(2);
    await env.REGISTRY_KV.put(tokenKey(record.sha256), JSON.stringify(record));
    expect((await authenticate(request(token), kv, now + 2)).ok).toBe(true);
  });

  it('a kept publish token is still refused for reading', async () => {
    const { token } = await issueToken(['acme'], { purpose: 'publish' });
    const now = Date.now();
    for (const at of [now, now + 1000])
      expect(await authenticate(request(token), env.REGISTRY_KV, at)).toMatchObject({ ok: false, message: expect.stringContaining('publish token') });
  });
});
