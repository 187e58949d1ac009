import { beforeAll, describe, expect, it } from 'vitest';
import { address, fakeRelease, get, getWith, resolve, seed, sha256HexOf } from './helpers';
import { parseShasums } from '../../src/protocol/hashes';
import { TEST_KEY } from '../fixtures/release';

const thing = address('acme', 'thing');
const PLATFORMS = ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'];

beforeAll(async () => {
  await seed([
    fakeRelease(thing, '1.1.0', PLATFORMS),
    fakeRelease(thing, '1.0.0', PLATFORMS),
    fakeRelease(thing, '2.0.0', ['linux_amd64'], { protocols: ['6.0'] }),
    fakeRelease(thing, '1.10.0', PLATFORMS),
  ]);
});

describe('GET /v1/providers/:namespace/:type/versions', () => {
  it('lists every version with protocols and platforms, in semver order', async () => {
    const response = await get('/v1/providers/acme/thing/versions');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toMatch(/max-age=5\b/);
    const body = await response.json<{ versions: { version: string; protocols: string[]; platforms: unknown[] }[] }>();
    expect(body.versions.map((v) => v.version)).toEqual(['1.0.0', '1.1.0', '1.10.0', '2.0.0']);
    expect(body.versions[0]).toEqual({
      version: '1.0.0',
      protocols: ['5.0'],
      platforms: PLATFORMS.map((p) => ({ os: p.split('_')[0], arch: p.split('_')[1] })),
    });
    expect(body.versions[3]).toEqual({ version: '2.0.0', protocols: ['6.0'], platforms: [{ os: 'linux', arch: 'amd64' }] });
  });

  it('matches namespace and type case-insensitively, as Terraform normalises them', async () => {
    const lower = await (await get('/v1/providers/acme/thing/versions')).text();
    expect(await (await get('/v1/providers/ACME/Thing/versions')).text()).toBe(lower);
  });

  it('answers 404 with an errors array for a provider that is not published', async () => {
    const response = await get('/v1/providers/acme/nothing/versions');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ errors: ['provider registry.example.com/acme/nothing not found'] });
  });

  it('answers HEAD like GET, without a body', async () => {
    const response = await get('/v1/providers/acme/thing/versions', { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
    expect(Number(response.headers.get('content-length'))).toBeGreaterThan(0);
  });
});

describe('GET /v1/providers/:namespace/:type/:version/download/:os/:arch', () => {
  const path = '/v1/providers/acme/thing/1.1.0/download/linux/arm64';

  it('has every required field, echoing os and arch', async () => {
    const response = await get(path);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toContain('immutable');
    const body = await response.json<Record<string, unknown>>();
    expect(body).toMatchObject({
      protocols: ['5.0'],
      os: 'linux',
      arch: 'arm64',
      filename: 'terraform-provider-thing_1.1.0_linux_arm64.zip',
      signing_keys: { gpg_public_keys: [{ key_id: TEST_KEY.key_id, ascii_armor: TEST_KEY.ascii_armor }] },
    });
    expect(body.shasum).toMatch(/^[0-9a-f]{64}$/);
    for (const field of ['download_url', 'shasums_url', 'shasums_signature_url']) expect(typeof body[field]).toBe('string');
  });

  it('gives URLs that, resolved against the response URL, serve the archive, SHA256SUMS and signature', async () => {
    const body = await (await get(path)).json<Record<string, string>>();
    const archive = await get(resolve(body.download_url!, path));
    expect(archive.status).toBe(200);
    expect(await sha256HexOf(archive)).toBe(body.shasum);

    const sums = await get(resolve(body.shasums_url!, path));
    expect(sums.status).toBe(200);
    const line = parseShasums(await sums.text()).find((entry) => entry.filename === body.filename);
    expect(line?.sha256Hex).toBe(body.shasum);

    const signature = await get(resolve(body.shasums_signature_url!, path));
    expect(signature.status).toBe(200);
    expect((await signature.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  it("carries OpenTofu's packages object: zh and h1 hashes and the size of every platform", async () => {
    const release = fakeRelease(thing, '1.1.0', PLATFORMS);
    const body = await (await get(path)).json<{ packages: Record<string, { hashes: string[]; package_size: number }> }>();
    expect(Object.keys(body.packages).sort()).toEqual([...PLATFORMS].sort());
    for (const pkg of release.record.packages) {
      expect(body.packages[`${pkg.os}_${pkg.arch}`]).toEqual({ hashes: [`zh:${pkg.shasum}`, pkg.h1], package_size: pkg.size });
    }
  });

  it('answers 404 for an unknown version, platform or provider', async () => {
    for (const missing of [
      '/v1/providers/acme/thing/9.9.9/download/linux/amd64',
      '/v1/providers/acme/thing/2.0.0/download/darwin/arm64',
      '/v1/providers/acme/thing/1.1.0/download/plan9/amd64',
      '/v1/providers/acme/other/1.1.0/download/linux/amd64',
    ]) {
      const response = await get(missing);
      expect(response.status, missing).toBe(404);
      expect((await response.json<{ errors: string[] }>()).errors).toHaveLength(1);
    }
  });

  it('answers 400 for a version that is not semver', async () => {
    for (const version of ['v1.1.0', '1.1', 'latest', '01.1.0']) {
      const response = await get(`/v1/providers/acme/thing/${version}/download/linux/amd64`);
      expect(response.status, version).toBe(400);
      expect((await response.json<{ errors: string[] }>()).errors[0]).toContain('not a semantic version');
    }
  });

  it('makes release URLs absolute on ARCHIVE_BASE_URL when one is configured', async () => {
    const body = await (await getWith({ ARCHIVE_BASE_URL: 'https://downloads.example.com/' }, path)).json<Record<string, string>>();
    expect(body.download_url).toBe(
      'https://downloads.example.com/v1/archives/registry.example.com/acme/thing/1.1.0/terraform-provider-thing_1.1.0_linux_arm64.zip',
    );
    expect(body.shasums_url).toMatch(/^https:\/\/downloads\.example\.com\/v1\/archives\/.*_SHA256SUMS$/);
  });
});
