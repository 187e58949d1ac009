import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { address, atFakeTime, fakeRelease, getWith, seed } from './helpers';
import { publishVersion, rebuildProviderIndex } from '../../src/store/providers/write';
import { readVersionRecord } from '../../src/store/providers/version-records';
import { storeMirroredVersion } from '../../src/store/mirror/write';

// With INDEX_CACHE_SECONDS > 0 an isolate reuses version lists and "not found" answers for that long and
// no longer: a version published meanwhile is listed (and its documents found) once the lifetime has passed.
// Immutable documents are cached longer, which is only safe because they never change.

const SECONDS = '1';
const vars = { INDEX_CACHE_SECONDS: SECONDS };
// The isolate's cache reads Date.now(): requests are made at chosen instants on a fake clock (to the
// millisecond, no sleeping); publishing runs on the real clock in between.
const T0 = Date.UTC(2031, 0, 1);
const at = <T>(ms: number, request: () => Promise<T>): Promise<T> => atFakeTime(T0 + ms, request);
afterEach(() => {
  vi.useRealTimers();
});
const LIFETIME_MS = Number(SECONDS) * 1000;
const versionsOf = async (path: string) => (await (await getWith(vars, path)).json<{ versions: { version: string }[] }>()).versions.map((v) => v.version);

describe(`INDEX_CACHE_SECONDS = ${SECONDS}`, () => {
  it('a version list is reused within the lifetime, sent with that max-age, and re-read after it', async () => {
    const provider = address('acme', 'lifetime');
    await seed([fakeRelease(provider, '1.0.0')]);
    const path = '/v1/providers/acme/lifetime/versions';
    const first = await at(0, () => getWith(vars, path));
    expect(first.headers.get('cache-control')).toBe(`public, max-age=${SECONDS}`);
    expect((await first.json<{ versions: unknown[] }>()).versions).toHaveLength(1);

    const next = fakeRelease(provider, '1.1.0');
    await publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, next.record, next.files);
    expect(await at(LIFETIME_MS - 1, () => versionsOf(path))).toEqual(['1.0.0']); // cached
    expect(await at(LIFETIME_MS, () => versionsOf(path))).toEqual(['1.0.0', '1.1.0']);
  });

  it('the mirror index.json likewise', async () => {
    const provider = address('acme', 'mirrorlife');
    await seed([fakeRelease(provider, '1.0.0')]);
    const path = '/v1/mirror/registry.example.com/acme/mirrorlife/index.json';
    const keys = async () => Object.keys((await (await getWith(vars, path)).json<{ versions: object }>()).versions);
    expect(await at(0, keys)).toEqual(['1.0.0']);
    const next = fakeRelease(provider, '2.0.0');
    await publishVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, next.record, next.files);
    expect(await at(LIFETIME_MS - 1, keys)).toEqual(['1.0.0']);
    expect(await at(LIFETIME_MS, keys)).toEqual(['1.0.0', '2.0.0']);
  });

  it('"not found" for a provider is reused only for the lifetime; a version document and a mirror version answer once committed', async () => {
    const provider = address('acme', 'absent');
    const lists = ['/v1/providers/acme/absent/versions', '/v1/mirror/registry.example.com/acme/absent/index.json'];
    // A version's documents are never remembered as absent (a list read later may name the version: issue 34);
    // a miss is answered from the version's R2 record, the source of truth.
    const documents = ['/v1/providers/acme/absent/1.0.0/download/linux/amd64', '/v1/mirror/registry.example.com/acme/absent/1.0.0.json'];
    for (const path of [...lists, ...documents]) expect((await at(0, () => getWith(vars, path))).status, path).toBe(404);
    await seed([fakeRelease(provider, '1.0.0', ['linux_amd64'])]);
    for (const path of lists) expect((await at(LIFETIME_MS - 1, () => getWith(vars, path))).status, `${path} (cached)`).toBe(404);
    for (const path of documents) expect((await at(LIFETIME_MS - 1, () => getWith(vars, path))).status, `${path} (committed)`).toBe(200);
    for (const path of lists) expect((await at(LIFETIME_MS, () => getWith(vars, path))).status, `${path} after the lifetime`).toBe(200);
  });

  it('a published version document is immutable: served with a one-year immutable lifetime', async () => {
    await seed([fakeRelease(address('acme', 'forever'), '1.0.0', ['linux_amd64'])]);
    for (const path of ['/v1/providers/acme/forever/1.0.0/download/linux/amd64', '/v1/mirror/registry.example.com/acme/forever/1.0.0.json']) {
      expect((await getWith(vars, path)).headers.get('cache-control'), path).toBe('public, max-age=31536000, immutable');
    }
  });
});

describe('a version mirrored from another registry', () => {
  it('is cached like a list, so a platform added by a later mirror sync is served after the lifetime', async () => {
    const upstream = { hostname: 'registry.terraform.io', namespace: 'hashicorp', type: 'grows' };
    const first = fakeRelease(upstream, '1.0.0', ['linux_amd64']);
    await storeMirroredVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, first.record, first.files);
    await rebuildProviderIndex({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, upstream, () => {});
    const path = '/v1/mirror/registry.terraform.io/hashicorp/grows/1.0.0.json';
    const platforms = async (ms: number) => Object.keys((await (await at(ms, () => getWith(vars, path))).json<{ archives: object }>()).archives).sort();
    const response = await at(0, () => getWith(vars, path));
    expect(response.headers.get('cache-control')).toBe(`public, max-age=${SECONDS}`);
    expect(await platforms(1)).toEqual(['linux_amd64']);

    const wider = fakeRelease(upstream, '1.0.0', ['linux_amd64', 'darwin_arm64']);
    await storeMirroredVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, wider.record, wider.files);
    expect(await platforms(500)).toEqual(['linux_amd64']); // within the lifetime: the isolate's copy
    expect(await platforms(1001)).toEqual(['darwin_arm64', 'linux_amd64']);
  });

  it('keeps its bytes: a different archive for a mirrored platform is refused and nothing changes', async () => {
    const upstream = { hostname: 'registry.terraform.io', namespace: 'hashicorp', type: 'fixed' };
    const first = fakeRelease(upstream, '1.0.0', ['linux_amd64']);
    await storeMirroredVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, first.record, first.files);
    const changed = fakeRelease(upstream, '1.0.0', ['linux_amd64', 'darwin_arm64'], { salt: 'rebuilt' });
    await expect(storeMirroredVersion({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, changed.record, changed.files)).rejects.toThrow(
      /mirrored bytes never change — kept ours/,
    );
    const record = await readVersionRecord({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, upstream, '1.0.0');
    expect(record!.packages.map((p) => p.shasum)).toEqual(first.record.packages.map((p) => p.shasum));
  });
});

describe('404 is "not found", 400 is "malformed"', () => {
  it('a well-formed but unknown OS, arch or version is 404, for the registry, the mirror and release files', async () => {
    await seed([fakeRelease(address('acme', 'known'), '1.0.0', ['linux_amd64'])]);
    for (const path of [
      '/v1/providers/acme/known/1.0.0/download/haiku/amd64',
      '/v1/providers/acme/known/1.0.0/download/linux/riscv128',
      '/v1/providers/acme/known/1.0.0/download/plan9/amd64',
      '/v1/providers/acme/known/9.9.9/download/linux/amd64',
      '/v1/providers/acme/known/1.0.0-beta.1/download/linux/amd64',
      '/v1/mirror/registry.example.com/acme/known/9.9.9.json',
      '/v1/archives/registry.example.com/acme/known/9.9.9/terraform-provider-known_9.9.9_linux_amd64.zip',
      '/v1/archives/registry.example.com/acme/known/1.0.0/terraform-provider-known_1.0.0_haiku_amd64.zip',
    ]) {
      const response = await getWith(vars, path);
      expect(response.status, path).toBe(404);
      expect((await response.json<{ errors: string[] }>()).errors, path).toHaveLength(1);
    }
  });

  it('a platform or version that is not well-formed is 400', async () => {
    for (const path of [
      '/v1/providers/acme/known/1.0.0/download/linux_/amd64',
      '/v1/providers/acme/known/1.0.0/download/linux/amd-64',
      '/v1/providers/acme/known/1.0/download/linux/amd64',
    ]) {
      expect((await getWith(vars, path)).status, path).toBe(400);
    }
  });

  it('matches a platform case-insensitively', async () => {
    expect((await getWith(vars, '/v1/providers/acme/known/1.0.0/download/Linux/AMD64')).status).toBe(200);
  });
});
