import { beforeAll, describe, expect, it } from 'vitest';
import { address, fakeRelease, get, resolve, seed, sha256HexOf } from './helpers';

const own = address('acme', 'mirrored');
const upstream = address('hashicorp', 'random', 'registry.terraform.io');

beforeAll(async () => {
  await seed([
    fakeRelease(own, '0.2.0', ['linux_amd64', 'darwin_arm64']),
    fakeRelease(own, '0.10.0', ['linux_amd64', 'darwin_arm64']),
    fakeRelease(upstream, '3.6.0', ['linux_amd64', 'windows_386']),
  ]);
});

describe('GET /v1/mirror/:hostname/:namespace/:type/index.json', () => {
  it("lists our own providers' versions under the registry's hostname", async () => {
    const response = await get('/v1/mirror/registry.example.com/acme/mirrored/index.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ versions: { '0.2.0': {}, '0.10.0': {} } });
  });

  it('serves providers stored under another hostname (a mirrored upstream provider)', async () => {
    const response = await get('/v1/mirror/registry.terraform.io/hashicorp/random/index.json');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ versions: { '3.6.0': {} } });
  });

  it('matches hostname, namespace and type case-insensitively', async () => {
    const response = await get('/v1/mirror/Registry.Terraform.IO/HashiCorp/Random/index.json');
    expect(response.status).toBe(200);
  });

  it('answers 404 for a provider the mirror does not hold', async () => {
    const response = await get('/v1/mirror/registry.terraform.io/hashicorp/aws/index.json');
    expect(response.status).toBe(404);
    expect((await response.json<{ errors: string[] }>()).errors[0]).toContain('registry.terraform.io/hashicorp/aws');
  });
});

describe('GET /v1/mirror/:hostname/:namespace/:type/:version.json', () => {
  const path = '/v1/mirror/registry.terraform.io/hashicorp/random/3.6.0.json';

  it('gives each archive a URL relative to the document and its h1 and zh hashes', async () => {
    const response = await get(path);
    expect(response.status).toBe(200);
    // A mirrored upstream version may gain platforms (npm run mirror), so it is cached like a list.
    expect(response.headers.get('cache-control')).not.toContain('immutable');
    const body = await response.json<{ archives: Record<string, { url: string; hashes: string[] }> }>();
    const release = fakeRelease(upstream, '3.6.0', ['linux_amd64', 'windows_386']);
    expect(Object.keys(body.archives).sort()).toEqual(['linux_amd64', 'windows_386']);
    for (const pkg of release.record.packages) {
      const entry = body.archives[`${pkg.os}_${pkg.arch}`]!;
      expect(entry.hashes).toEqual([pkg.h1, `zh:${pkg.shasum}`]);
      const archive = await get(resolve(entry.url, path));
      expect(archive.status).toBe(200);
      expect(archive.headers.get('content-type')).toBe('application/zip');
      expect(await sha256HexOf(archive)).toBe(pkg.shasum);
    }
  });

  it('answers 404 for a version the mirror does not hold', async () => {
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/3.5.0.json')).status).toBe(404);
  });

  it('answers 400 for a version that is not semver and 404 for other file names', async () => {
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/v3.6.0.json')).status).toBe(400);
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/latest.json')).status).toBe(400);
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/index.html')).status).toBe(404);
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/3.6.0.zip')).status).toBe(404);
  });
});
