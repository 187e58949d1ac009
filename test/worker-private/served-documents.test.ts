import { describe, expect, it } from 'vitest';
import { servedDocument, servedVariantStats } from '../../src/access/release-urls';
import { signingWindow } from '../../src/access/signed-urls';
import { settings } from '../../src/config';
import { StoredDocument } from '../../src/store/stored-body';
import { env } from './helpers';

// The download document as served is rewritten (signed, absolute on the origin) once per stored document,
// origin and signing window, and kept with its gzip: a repeat request does neither again (issue 38).

const body = JSON.stringify({
  download_url: '/v1/archives/registry.example.com/kept/thing/1.0.0/terraform-provider-thing_1.0.0_linux_amd64.zip',
  shasums_url: '/v1/archives/registry.example.com/kept/thing/1.0.0/terraform-provider-thing_1.0.0_SHA256SUMS',
  padding: 'x'.repeat(2000),
});
const ORIGIN = 'https://registry.example.com';

describe('served variants of a stored document (private mode)', () => {
  it('are reused within a signing window, with their compressed bytes', async () => {
    const stored = new StoredDocument(body);
    const now = signingWindow(settings(env), Date.now()).signedAt + 10;
    const first = await servedDocument(stored, env, '/kept/a', ORIGIN, now);
    expect(first).not.toBe(stored);
    expect(first.text).toMatch(/"https:\/\/registry\.example\.com\/v1\/archives\/[^"]+\?expires=\d+&signature=[\w-]{43}"/);
    const gzip = await first.gzip();
    const again = await servedDocument(stored, env, '/kept/a', ORIGIN, now + 5_000);
    expect(again).toBe(first);
    expect(await again.gzip()).toBe(gzip);
    expect(stored.text).toBe(body); // the stored text is never changed
  });

  it('are made again in the next signing window, with a later expiry', async () => {
    const stored = new StoredDocument(body);
    const window = signingWindow(settings(env), Date.now());
    const first = await servedDocument(stored, env, '/kept/b', ORIGIN, window.signedAt);
    const next = await servedDocument(stored, env, '/kept/b', ORIGIN, window.until);
    expect(next).not.toBe(first);
    const expiry = (doc: StoredDocument) => Number(/expires=(\d+)/.exec(doc.text)![1]);
    expect(expiry(next) - expiry(first)).toBe((window.until - window.signedAt) / 1000);
    // Never valid longer than SIGNED_URL_MINUTES from when it is served.
    expect(expiry(first) * 1000).toBeLessThanOrEqual(window.signedAt + settings(env).signedUrlMinutes * 60_000);
  });

  it('are per origin, and made again from a re-read stored document or other settings', async () => {
    const stored = new StoredDocument(body);
    const now = Date.now();
    const a = await servedDocument(stored, env, '/kept/c', ORIGIN, now);
    const other = await servedDocument(stored, env, '/kept/c', 'http://localhost:8787', now);
    expect(other.text).toContain('"http://localhost:8787/v1/archives/');
    expect(await servedDocument(stored, env, '/kept/c', ORIGIN, now)).toBe(a);
    const reread = new StoredDocument(body);
    expect(await servedDocument(reread, env, '/kept/c', ORIGIN, now)).not.toBe(a);
    const rotated = await servedDocument(reread, { ...env, URL_SIGNING_SECRET: 'another-secret-of-at-least-32-characters!' }, '/kept/c', ORIGIN, now);
    expect(rotated.text).not.toBe(a.text);
  });

  it('stay within their byte bound', async () => {
    for (let i = 0; i < 50; i++)
      await servedDocument(new StoredDocument(body.replace('padding', `p${i}`).padEnd(400_000, ' ')), env, `/kept/many/${i}`, ORIGIN);
    const stats = servedVariantStats();
    expect(stats.bytes).toBeLessThanOrEqual(stats.maxBytes);
    expect(stats.evictions).toBeGreaterThan(0);
  });
});
