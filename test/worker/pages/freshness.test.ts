import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { address, atFakeTime, fakeRelease, getWith, seed } from '../helpers';
import { publishVersion } from '../../../src/store/providers/write';
import type { Env } from '../../../src/env';
import { moduleAddress } from '../../../src/protocol/modules-v1';
import { seedModule } from '../../fixtures/modules';

// Pages are as fresh as the API: a version published at any instant shows on every page no later than
// INDEX_CACHE_SECONDS after it shows in the API's version list. Both the page data and the rendered pages
// are cached in the isolate; a page rendered late in its data's lifetime must not be cached for a whole
// lifetime more (that would make pages up to 2 × INDEX_CACHE_SECONDS stale).

const SECONDS = '1';
const vars = { INDEX_CACHE_SECONDS: SECONDS };
const LIFETIME_MS = Number(SECONDS) * 1000;
const HTML = { headers: { accept: 'text/html' } };
// Requests at chosen instants on a fake clock (the isolate caches read Date.now()); publishing runs on
// the real clock in between. Each test uses its own instants far from the others' so no entry carries over.
const at = atFakeTime;
afterEach(() => {
  vi.useRealTimers();
});

const pageText = async (path: string) => {
  const response = await getWith(vars, path, HTML);
  expect(response.status, path).toBe(200);
  return response.text();
};
const apiVersions = async (path: string) =>
  (await (await getWith(vars, path)).json<{ versions: { version: string }[] }>()).versions.map((v) => v.version).sort();

describe(`pages with INDEX_CACHE_SECONDS = ${SECONDS}`, () => {
  it("a provider page rendered late in its data's lifetime is cached no longer than that data", async () => {
    const T0 = Date.UTC(2032, 0, 1);
    const provider = address('acme', 'freshpage');
    await seed([fakeRelease(provider, '1.0.0')]);
    // The version page reads the provider's page data at T0: cached until T0 + lifetime.
    expect(await at(T0, () => pageText('/providers/acme/freshpage/1.0.0'))).toContain('1.0.0');
    // The provider page, first rendered just before that data expires, from the cached data.
    expect(await at(T0 + LIFETIME_MS - 1, () => pageText('/providers/acme/freshpage'))).not.toContain('1.1.0');

    const next = fakeRelease(provider, '1.1.0');
    await publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, next.record, next.files);

    // The API lists 1.1.0 once its own lifetime has passed; the page must show it at the same instant.
    expect(await at(T0 + LIFETIME_MS, () => apiVersions('/v1/providers/acme/freshpage/versions'))).toEqual(['1.0.0', '1.1.0']);
    expect(await at(T0 + LIFETIME_MS, () => pageText('/providers/acme/freshpage'))).toContain('1.1.0');
  });

  it('the home page likewise (its catalogue shared by every filter)', async () => {
    const T0 = Date.UTC(2033, 0, 1);
    const provider = address('acme', 'freshhome');
    await seed([fakeRelease(provider, '1.0.0')]);
    const latestOn = (body: string) => /href="\/providers\/acme\/freshhome"[\s\S]*?v(\d+\.\d+\.\d+)/.exec(body)?.[1];
    expect(latestOn(await at(T0, () => pageText('/')))).toBe('1.0.0');
    expect(latestOn(await at(T0 + LIFETIME_MS - 1, () => pageText('/?q=freshhome')))).toBe('1.0.0');

    const next = fakeRelease(provider, '1.1.0');
    await publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, next.record, next.files);

    // Still within the lifetime of what was read at T0: cached (the page cache is in use at all).
    expect(latestOn(await at(T0 + LIFETIME_MS - 1, () => pageText('/?q=freshhome')))).toBe('1.0.0');
    expect(latestOn(await at(T0 + LIFETIME_MS, () => pageText('/?q=freshhome')))).toBe('1.1.0');
    expect(latestOn(await at(T0 + LIFETIME_MS, () => pageText('/')))).toBe('1.1.0');
  });

  it('a page rendered from fresh data is reused for the lifetime and not longer', async () => {
    const T0 = Date.UTC(2034, 0, 1);
    const provider = address('acme', 'freshonce');
    await seed([fakeRelease(provider, '1.0.0')]);
    const first = await at(T0, () => getWith(vars, '/providers/acme/freshonce', HTML));
    expect(first.headers.get('cache-control')).toBe(`public, max-age=${SECONDS}`);
    const next = fakeRelease(provider, '1.1.0');
    await publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, next.record, next.files);
    expect(await at(T0 + LIFETIME_MS - 1, () => pageText('/providers/acme/freshonce'))).not.toContain('1.1.0');
    expect(await at(T0 + LIFETIME_MS, () => pageText('/providers/acme/freshonce'))).toContain('1.1.0');
  });

  it('module pages likewise', async () => {
    const T0 = Date.UTC(2035, 0, 1);
    const bindings = env as unknown as Env;
    const module = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'freshmod', 'aws');
    await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, module, '1.0.0');
    expect(await at(T0, () => pageText('/modules/acme/freshmod/aws/1.0.0'))).toContain('1.0.0');
    expect(await at(T0 + LIFETIME_MS - 1, () => pageText('/modules/acme/freshmod/aws'))).not.toContain('1.1.0');
    await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, module, '1.1.0');
    expect(await at(T0 + LIFETIME_MS, () => pageText('/modules/acme/freshmod/aws'))).toContain('1.1.0');
  });
});
