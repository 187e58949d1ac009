import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../../src/env';
import { moduleAddress } from '../../../src/protocol/modules-v1';
import { sha256Hex } from '../../../src/protocol/hashes';
import { writeTar } from '../../../src/protocol/tar-write';
import { writeZip } from '../../../src/protocol/zip-writer';
import { readZipDirectory, readZipEntries, zipInMemory } from '../../../src/protocol/zip-reader';
import { withLease } from '../../../src/store/lease';
import { changeModuleLifecycle } from '../../../src/store/lifecycle/modules';
import { changeProviderLifecycle } from '../../../src/store/lifecycle/providers';
import { publishModuleVersion } from '../../../src/store/modules/write';
import type { ModuleVersionRecord } from '../../../src/store/modules/types';
import { fakeDocs } from '../../fixtures/modules';
import { address, fakeRelease, get, getWith, seed, sha256HexOf } from '../helpers';

/**
 * The OCI Distribution view at /v2/ (docs/oci.md) against the shapes
 * OpenTofu ≥ 1.10 requires (../shared/reference/oci-distribution-opentofu.md;
 * no such tofu can run here, so these are strict): the exact index and
 * manifest bytes, their digests and headers by tag and digest, HEAD and GET,
 * layers that are the stored zips (digest = zh:), tags/list paging, the
 * referrers answer, OCI's error JSON, withdrawn versions untagged,
 * deprecations as annotations, a module's tar.gz made into a zip once, and
 * what each request costs in KV and R2 operations.
 */
const kv = env.REGISTRY_KV;
const r2 = env.REGISTRY_R2;
const owner = { host: 'test', pid: 1, processStartedAt: new Date(0).toISOString(), purpose: 'oci test' };

const INDEX = 'application/vnd.oci.image.index.v1+json';
const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const EMPTY = { mediaType: 'application/vnd.oci.empty.v1+json', digest: 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', size: 2 };

const provider = address('acme', 'ocithing');
const upstream = address('hashicorp', 'random', 'registry.terraform.io');
const PLATFORMS = ['linux_amd64', 'darwin_arm64', 'windows_amd64', 'linux_arm64'];
const VERSIONS = ['1.0.0', '1.2.0', '1.10.0', '2.0.0-beta.1', '2.0.0+build.7', '0.9.0'];
const releases = new Map<string, ReturnType<typeof fakeRelease>>();
const mod = moduleAddress(env.REGISTRY_HOSTNAME, 'acme', 'net', 'aws');
const MODULE_FILES = [
  { name: 'main.tf', mode: 0o644, data: new TextEncoder().encode('variable "name" {}\n') },
  { name: 'modules/subnet/main.tf', mode: 0o644, data: new TextEncoder().encode('variable "cidr" {}\n') },
  { name: 'README.md', mode: 0o644, data: new TextEncoder().encode('# net\n') },
];

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer());
}

async function publishModule(version: string, format: 'tar.gz' | 'zip', bytes: Uint8Array): Promise<ModuleVersionRecord> {
  const sha256 = sha256Hex(bytes);
  const record: ModuleVersionRecord = {
    address: mod,
    version,
    filename: `net-aws-${version}.${format}`,
    format,
    sha256,
    size: bytes.byteLength,
    publishedAt: new Date(0).toISOString(),
  };
  await publishModuleVersion(
    { kv, blobs: r2 },
    record,
    fakeDocs(),
    { sha256Hex: sha256, size: bytes.byteLength, contentType: format === 'zip' ? 'application/zip' : 'application/gzip', open: () => bytes },
    () => {},
  );
  return record;
}

let tarRecord: ModuleVersionRecord;
let zipRecord: ModuleVersionRecord;
let zipPackage: Uint8Array;

beforeAll(async () => {
  for (const version of VERSIONS) releases.set(version, fakeRelease(provider, version, PLATFORMS));
  releases.set('upstream', fakeRelease(upstream, '3.6.0', ['linux_amd64', 'windows_386']));
  await seed([...releases.values()]);
  await withLease(r2, 'providers/oci-test', { owner }, async (lease) => {
    await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'withdraw', version: '0.9.0', message: 'broken' }, { lease });
    await changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', version: '1.0.0', message: 'use 1.2.0 or later' }, { lease });
  });
  tarRecord = await publishModule('1.0.0', 'tar.gz', await gzip(writeTar(MODULE_FILES)));
  // The zip the view must make of that tar: the deterministic writer's, regular files 0644.
  zipPackage = writeZip(MODULE_FILES.map((f) => ({ ...f, mode: 0o100644 })));
  zipRecord = await publishModule('1.1.0', 'zip', zipPackage);
  await publishModule('2.0.0', 'zip', zipPackage);
  await withLease(r2, 'modules/oci-test', { owner }, (lease) =>
    changeModuleLifecycle({ kv, blobs: r2 }, mod, { kind: 'withdraw', version: '2.0.0', message: 'oops' }, { lease }),
  );
});

const repo = '/v2/providers/registry.example.com/acme/ocithing';

/** The platform manifest of a package, as OpenTofu requires it (exact bytes). */
function expectedTarget(pkg: { shasum: string; size: number; filename: string }): string {
  return JSON.stringify({
    schemaVersion: 2,
    mediaType: MANIFEST,
    artifactType: 'application/vnd.opentofu.provider-target',
    config: EMPTY,
    layers: [{ mediaType: 'archive/zip', digest: `sha256:${pkg.shasum}`, size: pkg.size, annotations: { 'org.opencontainers.image.title': pkg.filename } }],
  });
}

describe('GET /v2/', () => {
  it('answers 200 {} with the API version header (public mode: anonymous)', async () => {
    const response = await get('/v2/');
    expect(response.status).toBe(200);
    expect(response.headers.get('docker-distribution-api-version')).toBe('registry/2.0');
    expect(await response.text()).toBe('{}');
  });
});

describe('tags/list', () => {
  it('lists the versions as tags in lexical order (+ as _), without the withdrawn one', async () => {
    const response = await get(`${repo}/tags/list`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({
      name: 'providers/registry.example.com/acme/ocithing',
      tags: ['1.0.0', '1.10.0', '1.2.0', '2.0.0+build.7'.replace('+', '_'), '2.0.0-beta.1'].sort(),
    });
  });

  it('pages with n and last, with a Link to the next page while more remain', async () => {
    const first = await get(`${repo}/tags/list?n=2`);
    expect(await first.json()).toEqual({ name: 'providers/registry.example.com/acme/ocithing', tags: ['1.0.0', '1.10.0'] });
    expect(first.headers.get('link')).toBe(`<${repo}/tags/list?n=2&last=1.10.0>; rel="next"`);
    const second = await get(`${repo}/tags/list?n=2&last=1.10.0`);
    expect(await second.json<{ tags: string[] }>()).toEqual({ name: 'providers/registry.example.com/acme/ocithing', tags: ['1.2.0', '2.0.0-beta.1'] });
    const last = await get(`${repo}/tags/list?n=2&last=2.0.0-beta.1`);
    expect((await last.json<{ tags: string[] }>()).tags).toEqual(['2.0.0_build.7']);
    expect(last.headers.get('link')).toBeNull();
    expect((await get(`${repo}/tags/list?n=x`)).status).toBe(400);
  });

  it('lists a mirrored upstream provider and the modules', async () => {
    expect(await (await get('/v2/providers/registry.terraform.io/hashicorp/random/tags/list')).json()).toEqual({
      name: 'providers/registry.terraform.io/hashicorp/random',
      tags: ['3.6.0'],
    });
    expect(await (await get('/v2/modules/acme/net/aws/tags/list')).json()).toEqual({ name: 'modules/acme/net/aws', tags: ['1.0.0', '1.1.0'] });
  });

  it('answers NAME_UNKNOWN for a repository it does not hold, and for a name of no kind', async () => {
    for (const path of ['/v2/providers/registry.example.com/acme/absent/tags/list', '/v2/modules/acme/absent/aws/tags/list', '/v2/other/thing/tags/list']) {
      const response = await get(path);
      expect(response.status, path).toBe(404);
      expect((await response.json<{ errors: { code: string }[] }>()).errors[0]!.code).toBe('NAME_UNKNOWN');
    }
  });
});

describe('provider manifests', () => {
  it('HEAD by tag gives Content-Type, Content-Length and Docker-Content-Digest; GET the same bytes; the digest is their sha256', async () => {
    const head = await get(`${repo}/manifests/1.2.0`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe(INDEX);
    const body = new Uint8Array(await (await get(`${repo}/manifests/1.2.0`)).arrayBuffer());
    expect(head.headers.get('content-length')).toBe(String(body.byteLength));
    expect(head.headers.get('docker-content-digest')).toBe(`sha256:${sha256Hex(body)}`);
    const byDigest = await get(`${repo}/manifests/${head.headers.get('docker-content-digest')}`);
    expect(byDigest.headers.get('content-type')).toBe(INDEX);
    expect(byDigest.headers.get('docker-content-digest')).toBe(head.headers.get('docker-content-digest'));
    expect(new Uint8Array(await byDigest.arrayBuffer())).toEqual(body);
  });

  it('the index is exactly the shape OpenTofu requires: one manifest per platform, each the stored zip as its one archive/zip layer', async () => {
    const release = releases.get('1.2.0')!;
    const index = await (await get(`${repo}/manifests/1.2.0`)).text();
    const platforms = [...release.record.packages].sort((a, b) => (a.os === b.os ? (a.arch < b.arch ? -1 : 1) : a.os < b.os ? -1 : 1));
    expect(index).toBe(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: INDEX,
        artifactType: 'application/vnd.opentofu.provider',
        manifests: platforms.map((pkg) => ({
          mediaType: MANIFEST,
          digest: `sha256:${sha256Hex(expectedTarget(pkg))}`,
          size: new TextEncoder().encode(expectedTarget(pkg)).byteLength,
          platform: { os: pkg.os, architecture: pkg.arch },
          artifactType: 'application/vnd.opentofu.provider-target',
        })),
        annotations: { 'org.opencontainers.image.version': '1.2.0' },
      }),
    );
    for (const pkg of release.record.packages) {
      const digest = `sha256:${sha256Hex(expectedTarget(pkg))}`;
      const manifest = await get(`${repo}/manifests/${digest}`);
      expect(manifest.status).toBe(200);
      expect(manifest.headers.get('content-type')).toBe(MANIFEST);
      expect(await manifest.text()).toBe(expectedTarget(pkg));
      // The layer is the stored zip: its digest is the zh: hash, its bytes the archive's.
      const layer = await get(`${repo}/blobs/sha256:${pkg.shasum}`);
      expect(layer.status).toBe(200);
      expect(layer.headers.get('docker-content-digest')).toBe(`sha256:${pkg.shasum}`);
      expect(layer.headers.get('content-length')).toBe(String(pkg.size));
      expect(await sha256HexOf(layer)).toBe(pkg.shasum);
    }
  });

  it('serves a layer with ranges and conditions (the one release-file server), and the empty config blob', async () => {
    const pkg = releases.get('1.2.0')!.record.packages[0]!;
    const bytes = releases.get('1.2.0')!.bytes.get(pkg.filename)!;
    const part = await get(`${repo}/blobs/sha256:${pkg.shasum}`, { headers: { range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 10-19/${pkg.size}`);
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(10, 20));
    const etag = (await get(`${repo}/blobs/sha256:${pkg.shasum}`, { method: 'HEAD' })).headers.get('etag')!;
    expect((await get(`${repo}/blobs/sha256:${pkg.shasum}`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const config = await get(`${repo}/blobs/${EMPTY.digest}`);
    expect(config.headers.get('content-type')).toBe(EMPTY.mediaType);
    expect(await config.text()).toBe('{}');
  });

  it('tags build metadata with _ and annotates a deprecated version; a mirrored upstream provider is served alike', async () => {
    const build = await get(`${repo}/manifests/2.0.0_build.7`);
    expect(build.status).toBe(200);
    expect((await build.json<{ annotations: Record<string, string> }>()).annotations).toEqual({ 'org.opencontainers.image.version': '2.0.0+build.7' });
    const deprecated = await get(`${repo}/manifests/1.0.0`);
    expect((await deprecated.json<{ annotations: Record<string, string> }>()).annotations).toEqual({
      'org.opencontainers.image.version': '1.0.0',
      'io.edge-registry.deprecation': 'use 1.2.0 or later',
    });
    const mirrored = await get('/v2/providers/registry.terraform.io/hashicorp/random/manifests/3.6.0');
    expect(mirrored.status).toBe(200);
    const index = await mirrored.json<{ manifests: { platform: { os: string; architecture: string } }[] }>();
    expect(index.manifests.map((m) => m.platform)).toEqual([
      { os: 'linux', architecture: 'amd64' },
      { os: 'windows', architecture: '386' },
    ]);
    const pkg = releases.get('upstream')!.record.packages[0]!;
    expect(await sha256HexOf(await get(`/v2/providers/registry.terraform.io/hashicorp/random/blobs/sha256:${pkg.shasum}`))).toBe(pkg.shasum);
  });

  it('a served index never changes: a later deprecation leaves its bytes (and digest) as they were', async () => {
    const before = await get(`${repo}/manifests/1.10.0`);
    const digest = before.headers.get('docker-content-digest');
    const text = await before.text();
    await withLease(r2, 'providers/oci-test', { owner }, (lease) =>
      changeProviderLifecycle({ kv, blobs: r2 }, provider, { kind: 'deprecate', version: '1.10.0', message: 'later' }, { lease }),
    );
    const after = await get(`${repo}/manifests/1.10.0`);
    expect(after.headers.get('docker-content-digest')).toBe(digest);
    expect(await after.text()).toBe(text);
  });

  it('refuses with OCI error JSON: withdrawn or unknown tags, non-version tags, unknown digests and blobs, malformed digests', async () => {
    const cases: [string, number, string][] = [
      [`${repo}/manifests/0.9.0`, 404, 'MANIFEST_UNKNOWN'],
      [`${repo}/manifests/7.0.0`, 404, 'MANIFEST_UNKNOWN'],
      [`${repo}/manifests/latest`, 404, 'MANIFEST_UNKNOWN'],
      [`${repo}/manifests/sha256:${'0'.repeat(64)}`, 404, 'MANIFEST_UNKNOWN'],
      [`${repo}/blobs/sha256:${'0'.repeat(64)}`, 404, 'BLOB_UNKNOWN'],
      [`${repo}/manifests/sha512:${'0'.repeat(128)}`, 400, 'DIGEST_INVALID'],
      [`${repo}/blobs/sha256:XYZ`, 400, 'DIGEST_INVALID'],
      ['/v2/providers/registry.example.com/acme/absent/manifests/1.0.0', 404, 'MANIFEST_UNKNOWN'],
      ['/v2/providers/bad_host!/acme/x/manifests/1.0.0', 400, 'NAME_INVALID'],
      ['/v2/providers/registry.example.com/%E0%A4%A/x/tags/list', 400, 'NAME_INVALID'],
      [`${repo}/blobs/sha256%3A%E0%A4%A`, 400, 'DIGEST_INVALID'],
      [`${repo}/referrers/%E0%A4%A`, 400, 'DIGEST_INVALID'],
      ['/v2/elsewhere', 404, 'NAME_UNKNOWN'],
    ];
    for (const [path, status, code] of cases) {
      const response = await get(path);
      expect(response.status, path).toBe(status);
      expect(response.headers.get('content-type'), path).toBe('application/json');
      const body = await response.json<{ errors: { code: string; message: string }[] }>();
      expect(body.errors[0]!.code, path).toBe(code);
      expect(body.errors[0]!.message.length, path).toBeGreaterThan(0);
    }
    // A layer of another repository is not this one's blob.
    const other = releases.get('upstream')!.record.packages[0]!.shasum;
    expect((await get(`${repo}/blobs/sha256:${other}`)).status).toBe(404);
    const put = await get(`${repo}/manifests/1.2.0`, { method: 'PUT', body: '{}' });
    expect(put.status).toBe(405);
    expect((await put.json<{ errors: { code: string }[] }>()).errors[0]!.code).toBe('UNSUPPORTED');
  });

  it('answers referrers with an empty image index', async () => {
    const response = await get(`${repo}/referrers/sha256:${'a'.repeat(64)}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(INDEX);
    expect(await response.json()).toEqual({ schemaVersion: 2, mediaType: INDEX, manifests: [] });
  });
});

describe('module manifests', () => {
  it('a module is an image manifest (modulepkg) with one zip layer; a tar.gz package is made into a deterministic zip once', async () => {
    const response = await get('/v2/modules/acme/net/aws/manifests/1.0.0');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(MANIFEST);
    const text = await response.text();
    const zipDigest = sha256Hex(zipPackage);
    expect(text).toBe(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MANIFEST,
        artifactType: 'application/vnd.opentofu.modulepkg',
        config: EMPTY,
        layers: [
          {
            mediaType: 'archive/zip',
            digest: `sha256:${zipDigest}`,
            size: zipPackage.byteLength,
            annotations: { 'org.opencontainers.image.title': 'net-aws-1.0.0.zip' },
          },
        ],
        annotations: { 'org.opencontainers.image.version': '1.0.0' },
      }),
    );
    expect(response.headers.get('docker-content-digest')).toBe(`sha256:${sha256Hex(text)}`);
    expect(tarRecord.format).toBe('tar.gz');
    // The one zip reader reads every file of the tar back, byte for byte.
    const source = zipInMemory(zipPackage, async () => {
      throw new Error('stored entries need no inflating');
    });
    const directory = await readZipDirectory(source, 'module zip', 'module');
    const entries = await readZipEntries(source, directory, 'module zip', 'module', () => true);
    expect(new Map([...entries].map(([entry, data]) => [entry.name, new TextDecoder().decode(data)]))).toEqual(
      new Map(MODULE_FILES.map((f) => [f.name, new TextDecoder().decode(f.data)])),
    );
  });

  it('a package published as zip is its own layer (the stored bytes, no copy); withdrawn versions are not tagged', async () => {
    const response = await get('/v2/modules/acme/net/aws/manifests/1.1.0');
    const manifest = JSON.parse(await response.text()) as { layers: { digest: string; size: number }[] };
    expect(response.status, JSON.stringify(manifest)).toBe(200);
    expect(manifest.layers).toEqual([
      {
        mediaType: 'archive/zip',
        digest: `sha256:${zipRecord.sha256}`,
        size: zipRecord.size,
        annotations: { 'org.opencontainers.image.title': 'net-aws-1.1.0.zip' },
      },
    ]);
    expect(await r2.head(`.oci/modules/${env.REGISTRY_HOSTNAME}/acme/net/aws/zips/1.1.0.zip`)).toBeNull();
    expect((await get('/v2/modules/acme/net/aws/manifests/2.0.0')).status).toBe(404);
  });
});

describe('cost per request (real KV and R2, counted)', () => {
  function counting(): { bindings: Partial<Env>; ops: () => { kv: number; r2: number; r2Writes: number } } {
    let kvOps = 0;
    let r2Ops = 0;
    let r2Writes = 0;
    const wrap = <T extends object>(target: T, onCall: (name: string) => void): T =>
      new Proxy(target, {
        get(t, property) {
          const value = Reflect.get(t, property, t);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            onCall(String(property));
            return (value as (...a: unknown[]) => unknown).apply(t, args);
          };
        },
      });
    const bindings = {
      REGISTRY_KV: wrap(kv, () => kvOps++),
      REGISTRY_R2: wrap(r2, (name) => {
        r2Ops++;
        if (name === 'put') r2Writes++;
      }),
    } as Partial<Env>;
    return { bindings, ops: () => ({ kv: kvOps, r2: r2Ops, r2Writes }) };
  }

  it('measures tags/list, manifest by tag and by digest, and a blob', async () => {
    const version = '2.0.0-beta.1';
    const figures: Record<string, { kv: number; r2: number; r2Writes: number }> = {};
    const measure = async (name: string, path: string, init?: RequestInit) => {
      const c = counting();
      const response = await getWith(c.bindings, path, init);
      await response.arrayBuffer();
      expect(response.status, path).toBeLessThan(300);
      figures[name] = c.ops();
    };
    await measure('tags/list', `${repo}/tags/list`);
    await measure('manifest by tag, first (writes the view)', `${repo}/manifests/${version}`);
    await measure('manifest by tag', `${repo}/manifests/${version}`, { method: 'HEAD' });
    const digest = (await get(`${repo}/manifests/${version}`)).headers.get('docker-content-digest')!;
    await measure('manifest by digest', `${repo}/manifests/${digest}`);
    await measure('blob', `${repo}/blobs/sha256:${releases.get(version)!.record.packages[0]!.shasum}`);
    console.log(`OCI cost per request: ${JSON.stringify(figures)}`);
    // At most one KV read (the list; none while the isolate keeps it, INDEX_CACHE_SECONDS).
    expect(figures['tags/list']!.kv).toBeLessThanOrEqual(1);
    expect(figures['tags/list']!.r2).toBe(0);
    // First: the list, the tag (absent), the record, the lifecycle; 2 puts per platform (manifest, layer pointer) and 2 (index, tag).
    expect(figures['manifest by tag, first (writes the view)']!.r2Writes).toBe(PLATFORMS.length * 2 + 2);
    expect(figures['manifest by tag']!.kv).toBeLessThanOrEqual(1);
    expect(figures['manifest by tag']).toMatchObject({ r2: 1, r2Writes: 0 });
    expect(figures['manifest by digest']).toEqual({ kv: 0, r2: 1, r2Writes: 0 });
    expect(figures.blob!.kv).toBe(0);
    expect(figures.blob!.r2).toBeLessThanOrEqual(2);
  });

  it('adds nothing to the /v1/ routes: a providers.v1 download document reads no OCI object', async () => {
    const c = counting();
    await (await getWith(c.bindings, '/v1/providers/acme/ocithing/1.2.0/download/linux/amd64')).arrayBuffer();
    expect(c.ops().r2).toBe(0);
  });
});

describe('the pages show the OCI configuration beside the other snippets', () => {
  it('a provider page: oci_mirror with a ${hostname} template; a module page: an oci:// source of the version', async () => {
    const page = await (await get('/providers/acme/ocithing/1.2.0')).text();
    expect(page).toContain('id="snippet-oci-mirror"');
    expect(page).toContain('repository_template = &quot;registry.example.com/providers/${hostname}/${namespace}/${type}&quot;');
    expect(page).toContain('include             = [&quot;registry.example.com/acme/ocithing&quot;]');
    const upstreamPage = await (await get('/mirror/registry.terraform.io/hashicorp/random')).text();
    expect(upstreamPage).toContain('include             = [&quot;registry.terraform.io/hashicorp/random&quot;]');
    const modulePage = await (await get('/modules/acme/net/aws/1.1.0')).text();
    expect(modulePage).toContain('source = &quot;oci://registry.example.com/modules/acme/net/aws?tag=1.1.0&quot;');
  });
});
