import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../../src/env';
import { moduleAddress } from '../../../src/protocol/modules-v1';
import { providerLifecycleKey } from '../../../src/store/layout';
import { withLease } from '../../../src/store/lease';
import { commitLifecycle } from '../../../src/store/lifecycle/change';
import { changeModuleLifecycle } from '../../../src/store/lifecycle/modules';
import { changeProviderLifecycle } from '../../../src/store/lifecycle/providers';
import { seedModule } from '../../fixtures/modules';
import { address, atFakeTime, fakeRelease, get, seed } from '../helpers';
import { NotStoredError } from '../../../src/store/errors';

/**
 * Deprecate and withdraw as the Worker serves them, through the store's real
 * write path (the lease, the conditional R2 commit, the list rebuild) against
 * Miniflare's KV and R2. Each test uses its own provider or module, so the
 * isolate's cached lists of one never hide another's change.
 */
const bindings = env as unknown as Env;
const kv = bindings.REGISTRY_KV;
const r2 = bindings.REGISTRY_R2;
const PLATFORMS = ['linux_amd64', 'darwin_arm64'];
const owner = { host: 'test', pid: 1, processStartedAt: new Date(0).toISOString(), purpose: 'lifecycle test' };

async function publish(type: string, versions: string[]) {
  const provider = address('acme', type);
  await seed(versions.map((v) => fakeRelease(provider, v, PLATFORMS)));
  return provider;
}

type Versions = { versions: { version: string }[]; warnings?: string[] };

describe('withdraw a provider version', () => {
  let provider: ReturnType<typeof address>;
  beforeAll(async () => {
    provider = await publish('withdrawn', ['1.0.0', '1.1.0', '1.2.0']);
    await withLease(r2, 'providers/test', { owner }, (lease) =>
      changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'withdraw', version: '1.2.0', message: 'corrupts state on upgrade; use 1.1.0' }, { lease }),
    );
  });

  it('leaves the versions list and the mirror index, with a warning that says why and what to do', async () => {
    const body = await (await get('/v1/providers/acme/withdrawn/versions')).json<Versions>();
    expect(body.versions.map((v) => v.version)).toEqual(['1.0.0', '1.1.0']);
    expect(body.warnings).toHaveLength(1);
    expect(body.warnings![0]).toMatch(
      /^registry\.example\.com\/acme\/withdrawn 1\.2\.0 was withdrawn on \d{4}-\d\d-\d\d: corrupts state on upgrade; use 1\.1\.0\./,
    );
    expect(body.warnings![0]).toContain('terraform init -upgrade');
    const mirror = await (await get(`/v1/mirror/${provider.hostname}/acme/withdrawn/index.json`)).json<{ versions: Record<string, object> }>();
    expect(Object.keys(mirror.versions)).toEqual(['1.0.0', '1.1.0']);
  });

  it('keeps the download document, the archive and the mirror version document reachable (lock files, audits)', async () => {
    const download = await get('/v1/providers/acme/withdrawn/1.2.0/download/linux/amd64');
    expect(download.status).toBe(200);
    const { download_url } = await download.json<{ download_url: string }>();
    expect((await get(download_url)).status).toBe(200);
    expect((await get(`/v1/mirror/${provider.hostname}/acme/withdrawn/1.2.0.json`)).status).toBe(200);
  });

  it("is not the pages' default, is marked withdrawn, and its own page says why", async () => {
    const page = await (await get('/providers/acme/withdrawn', { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('<span class="badge accent">v1.1.0</span>');
    expect(page).toMatch(/1\.2\.0<\/a> <span class="badge pre">withdrawn<\/span>/);
    const own = await (await get('/providers/acme/withdrawn/1.2.0', { headers: { accept: 'text/html' } })).text();
    expect(own).toContain('Version 1.2.0 was withdrawn');
    expect(own).toContain('corrupts state on upgrade; use 1.1.0');
    const home = await (await get('/', { headers: { accept: 'text/html' } })).text();
    expect(home).toMatch(/acme\/withdrawn[\s\S]*?v1\.1\.0/);
  });

  it('is offered again after restore', async () => {
    const restored = await publish('restored', ['1.0.0', '2.0.0']);
    await changeProviderLifecycle({ kv, blobs: r2 }, restored, { kind: 'withdraw', version: '2.0.0', message: 'bad build' });
    await changeProviderLifecycle({ kv, blobs: r2 }, restored, { kind: 'restore', version: '2.0.0' });
    const body = await (await get('/v1/providers/acme/restored/versions')).json<Versions>();
    expect(body.versions.map((v) => v.version)).toEqual(['1.0.0', '2.0.0']);
    expect(body.warnings).toBeUndefined();
  });
});

describe('deprecate a provider or a version', () => {
  it("puts the messages in the versions response's warnings, version named, and on the pages, escaped", async () => {
    const provider = await publish('deprecated', ['1.0.0', '1.1.0']);
    await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', message: 'moved to <b>acme/other</b>' });
    await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', version: '1.0.0', message: 'has a leak; use >= 1.1' });
    const body = await (await get('/v1/providers/acme/deprecated/versions')).json<Versions>();
    expect(body.versions.map((v) => v.version)).toEqual(['1.0.0', '1.1.0']);
    expect(body.warnings).toEqual([
      'registry.example.com/acme/deprecated is deprecated: moved to <b>acme/other</b>',
      'registry.example.com/acme/deprecated 1.0.0 is deprecated: has a leak; use >= 1.1',
    ]);
    const page = await (await get('/providers/acme/deprecated/1.0.0', { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('moved to &lt;b&gt;acme/other&lt;/b&gt;');
    expect(page).not.toContain('<b>acme/other</b>');
    expect(page).toContain('has a leak; use &gt;= 1.1');
  });

  it('is undone by undeprecate, and doing the same again changes nothing', async () => {
    const provider = await publish('undeprecated', ['1.0.0']);
    const first = await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', message: 'old' });
    const again = await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', message: 'old' });
    expect([first.changed, again.changed]).toEqual([true, false]);
    const stored = await (await r2.get(providerLifecycleKey(provider)))!.text();
    await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', message: 'old' });
    expect(await (await r2.get(providerLifecycleKey(provider)))!.text()).toBe(stored);
    expect((await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'undeprecate' })).changed).toBe(true);
    const body = await (await get('/v1/providers/acme/undeprecated/versions')).json<Versions>();
    expect(body.warnings).toBeUndefined();
  });
});

describe('bad input changes nothing', () => {
  it('refuses an unknown version or provider with a NotStoredError naming what exists', async () => {
    const provider = await publish('strict', ['1.0.0']);
    const before = await (await get('/v1/providers/acme/strict/versions')).text();
    const unknown = changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', version: '9.9.9', message: 'x' });
    await expect(unknown).rejects.toThrow(NotStoredError);
    // The message lists the published versions: what the maintainer meant to name.
    await expect(unknown).rejects.toThrow('published: 1.0.0');
    await expect(changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'withdraw', version: '1.0.1', message: 'x' })).rejects.toThrow(NotStoredError);
    await expect(changeProviderLifecycle({ kv, blobs: r2 }, address('acme', 'nonesuch'), { kind: 'deprecate', message: 'x' })).rejects.toThrow(NotStoredError);
    expect(await r2.head(providerLifecycleKey(provider))).toBeNull();
    // Past the list's isolate lifetime: what KV holds now, unchanged.
    expect(await atFakeTime(Date.now() + 60_000, async () => (await get('/v1/providers/acme/strict/versions')).text())).toBe(before);
  });
});

describe('crash safety', () => {
  it('a change killed after its commit point is completed by running it again (the rebuild runs even when nothing changes)', async () => {
    const provider = await publish('interrupted', ['1.0.0', '1.1.0']);
    // The commit alone, as if the process died before the rebuild.
    await commitLifecycle(r2, providerLifecycleKey(provider), { kind: 'withdraw', version: '1.1.0', message: 'bad' }, () => {});
    const stale = await (await get('/v1/providers/acme/interrupted/versions')).json<Versions>();
    expect(stale.versions.map((v) => v.version)).toEqual(['1.0.0', '1.1.0']);
    const again = await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'withdraw', version: '1.1.0', message: 'bad' });
    expect(again.changed).toBe(false);
    const body = await atFakeTime(Date.now() + 60_000, async () => (await get('/v1/providers/acme/interrupted/versions')).json<Versions>());
    expect(body.versions.map((v) => v.version)).toEqual(['1.0.0']);
  });

  it('a lease lost before the commit writes nothing', async () => {
    const provider = await publish('lost-lease', ['1.0.0']);
    const lost = {
      check() {
        throw new Error('lost the lease');
      },
    };
    await expect(changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', message: 'x' }, { lease: lost })).rejects.toThrow('lost the lease');
    expect(await r2.head(providerLifecycleKey(provider))).toBeNull();
  });
});

describe('modules', () => {
  it('a withdrawn version leaves the list and the catalog but keeps its page, download and package; deprecations show on the page', async () => {
    const net = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'net', 'aws');
    for (const v of ['1.0.0', '1.1.0']) await seedModule(kv, r2, net, v);
    await changeModuleLifecycle({ kv, blobs: r2 }, net, { kind: 'withdraw', version: '1.1.0', message: 'drops the <script>route</script> table' });
    await changeModuleLifecycle({ kv, blobs: r2 }, net, { kind: 'deprecate', message: 'use acme/network/aws' });
    const list = await (await get('/v1/modules/acme/net/aws/versions')).json();
    expect(list).toEqual({ modules: [{ versions: [{ version: '1.0.0' }] }] });
    const download = await get('/v1/modules/acme/net/aws/1.1.0/download');
    expect(download.status).toBe(204);
    expect((await get(download.headers.get('x-terraform-get')!)).status).toBe(200);
    const page = await (await get('/modules/acme/net/aws', { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('<span class="badge accent">v1.0.0</span>');
    expect(page).toContain('This module is deprecated');
    expect(page).toContain('use acme/network/aws');
    const withdrawnPage = await (await get('/modules/acme/net/aws/1.1.0', { headers: { accept: 'text/html' } })).text();
    expect(withdrawnPage).toContain('Version 1.1.0 was withdrawn');
    expect(withdrawnPage).toContain('drops the &lt;script&gt;route&lt;/script&gt; table');
    expect(withdrawnPage).not.toContain('<script>route');
    const index = await (await get('/modules', { headers: { accept: 'text/html' } })).text();
    expect(index).toMatch(/acme\/net\/aws[\s\S]*?v1\.0\.0/);
    await expect(changeModuleLifecycle({ kv, blobs: r2 }, net, { kind: 'withdraw', version: '3.0.0', message: 'x' })).rejects.toThrow(
      /module registry\.example\.com\/acme\/net\/aws has no version 3\.0\.0; published: 1\.0\.0, 1\.1\.0/,
    );
  });

  it('a deprecation reaches scripts in GET /v1/lifecycle/modules/… (modules.v1 has no warnings field for clients to print)', async () => {
    const vpc = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'vpc', 'aws');
    for (const v of ['1.0.0', '2.0.0']) await seedModule(kv, r2, vpc, v);
    // A module never marked (here: never published) has no marks.
    const empty = await get('/v1/lifecycle/modules/acme/unmarked/aws');
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual({ module: 'registry.example.com/acme/unmarked/aws', deprecated: null, versions: {}, warnings: [] });
    await changeModuleLifecycle({ kv, blobs: r2 }, vpc, { kind: 'deprecate', version: '1.0.0', message: 'IPv4 only; use 2.0.0' });
    const body = await (await get('/v1/lifecycle/modules/acme/vpc/aws')).json<{
      versions: Record<string, { deprecated?: { message: string } }>;
      warnings: string[];
    }>();
    expect(body.versions['1.0.0']?.deprecated?.message).toBe('IPv4 only; use 2.0.0');
    expect(body.warnings).toEqual(['registry.example.com/acme/vpc/aws 1.0.0 is deprecated: IPv4 only; use 2.0.0']);
    // The modules.v1 response is unchanged: both versions listed, no extra fields.
    expect(await (await get('/v1/modules/acme/vpc/aws/versions')).json()).toEqual({ modules: [{ versions: [{ version: '2.0.0' }, { version: '1.0.0' }] }] });
    expect((await get('/v1/lifecycle/modules/ac..me/vpc/aws')).status).toBe(400);
  });
});
