import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { address, fakeRelease, get } from './helpers';
import { publishVersions } from '../../src/store/publish';
import { KNOWN_ARCH } from '../../src/protocol/platform';

// A provider the size of the big public ones: 1,000 versions × 12 platforms.
const big = address('acme', 'huge');
const PLATFORMS = ['linux', 'darwin', 'windows'].flatMap((os) => ['amd64', 'arm64', '386', 'arm'].map((arch) => `${os}_${arch}`));
const VERSIONS = Array.from({ length: 1000 }, (_, i) => `${Math.floor(i / 100)}.${Math.floor(i / 10) % 10}.${i % 10}`);

beforeAll(async () => {
  expect(PLATFORMS).toHaveLength(12);
  expect(KNOWN_ARCH).toContain('386');
  // Metadata only: the Worker reads no release file to answer these routes.
  const releases = VERSIONS.map((version) => ({ ...fakeRelease(big, version, PLATFORMS, { archiveSize: 1 }), files: [] }));
  await publishVersions(env.REGISTRY_KV, env.REGISTRY_R2, releases);
}, 300_000); // 12,000 documents and 1,000 committed records through local KV/R2: minutes on a busy 2-core machine

describe('a provider with 1,000 versions × 12 platforms', () => {
  it('lists all 1,000 versions in order, each with 12 platforms', async () => {
    const response = await get('/v1/providers/acme/huge/versions');
    expect(response.status).toBe(200);
    const body = await response.json<{ versions: { version: string; platforms: unknown[] }[] }>();
    expect(body.versions.map((v) => v.version)).toEqual(VERSIONS);
    expect(body.versions.every((v) => v.platforms.length === 12)).toBe(true);
  });

  it('serves the download document of any version with all 12 platforms in packages', async () => {
    const body = await (await get('/v1/providers/acme/huge/9.9.9/download/windows/386')).json<{ filename: string; packages: object }>();
    expect(body.filename).toBe('terraform-provider-huge_9.9.9_windows_386.zip');
    expect(Object.keys(body.packages)).toHaveLength(12);
  });

  it('lists all 1,000 versions on the mirror', async () => {
    const body = await (await get('/v1/mirror/registry.example.com/acme/huge/index.json')).json<{ versions: object }>();
    expect(Object.keys(body.versions)).toHaveLength(1000);
    const version = await (await get('/v1/mirror/registry.example.com/acme/huge/5.0.1.json')).json<{ archives: object }>();
    expect(Object.keys(version.archives)).toHaveLength(12);
  });
});
