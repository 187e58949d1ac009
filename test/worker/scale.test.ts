import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { address, fakeRelease, get } from './helpers';
import { publishVersions } from '../../src/store/providers/write';
import { KNOWN_ARCH } from '../../src/protocol/platform';
import { committedRecordKey } from '../../src/store/layout';
import { commitRecord } from '../../src/store/records';

// A provider the size of the big public ones: 1,000 versions × 12 platforms.
const big = address('acme', 'huge');
const PLATFORMS = ['linux', 'darwin', 'windows'].flatMap((os) => ['amd64', 'arm64', '386', 'arm'].map((arch) => `${os}_${arch}`));
const VERSIONS = Array.from({ length: 1000 }, (_, i) => `${Math.floor(i / 100)}.${Math.floor(i / 10) % 10}.${i % 10}`);

// Served below: the lists (built from all 1,000 records) and the documents of two versions. So the
// seed writes every version's record, publishes those two versions fully, and rebuilds the lists once.
const PUBLISHED = ['9.9.9', '5.0.1'];

beforeAll(async () => {
  expect(PLATFORMS).toHaveLength(12);
  expect(KNOWN_ARCH).toContain('386');
  // Every other version's record is the template's with its version and file names changed: the lists
  // read only version, protocols and platforms from them.
  const template = fakeRelease(big, '0.0.0', PLATFORMS, { archiveSize: 1 }).record;
  const records = VERSIONS.filter((version) => !PUBLISHED.includes(version)).map((version) => ({
    ...template,
    version,
    packages: template.packages.map((p) => ({ ...p, filename: p.filename.replace('_0.0.0_', `_${version}_`) })),
  }));
  for (let i = 0; i < records.length; i += 100) {
    await Promise.all(records.slice(i, i + 100).map((record) => commitRecord(env.REGISTRY_R2, committedRecordKey(big, record.version), record)));
  }
  // Metadata only: the Worker reads no release file to answer these routes.
  await publishVersions(
    { kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 },
    PUBLISHED.map((version) => ({
      ...fakeRelease(big, version, PLATFORMS, { archiveSize: 1 }),
      files: [],
    })),
  );
}, 120_000);

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
