import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import worker from '../../src/index';
import type { Env } from '../../src/env';
import { moduleAddress } from '../../src/protocol/modules-v1';
import { rebuildModuleIndex } from '../../src/store/modules/lists';
import { fakeDocs, seedModule } from '../fixtures/modules';
import { countingKv, get, getWith, ORIGIN } from './helpers';

const bindings = env as unknown as Env;
const vpc = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'vpc', 'aws');
const underscored = moduleAddress(bindings.REGISTRY_HOSTNAME, 'my_team', 'net_base', 'google');
let v210: Uint8Array;

beforeAll(async () => {
  for (const version of ['1.0.0', '2.0.0', '2.0.3', '2.1.0-beta.1']) await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, vpc, version);
  v210 = (await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, vpc, '2.1.0')).bytes;
  await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, underscored, '0.1.0');
});

async function downloadLocation(path: string): Promise<string> {
  const response = await get(path);
  expect(response.status).toBe(204);
  expect(await response.text()).toBe('');
  return response.headers.get('x-terraform-get')!;
}

describe('modules.v1 discovery', () => {
  it('announces modules.v1 beside providers.v1', async () => {
    const body = await (await get('/.well-known/terraform.json')).json();
    expect(body).toEqual({ 'providers.v1': '/v1/providers/', 'modules.v1': '/v1/modules/' });
  });
});

describe('GET /v1/modules/:namespace/:name/:system/versions', () => {
  it('lists every version, newest first, in the protocol shape', async () => {
    const response = await get('/v1/modules/acme/vpc/aws/versions');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toMatch(/max-age=5\b/);
    expect(await response.json()).toEqual({
      modules: [{ versions: ['2.1.0', '2.1.0-beta.1', '2.0.3', '2.0.0', '1.0.0'].map((version) => ({ version })) }],
    });
  });

  it('matches case-insensitively and accepts underscores in namespace and name', async () => {
    expect(await (await get('/v1/modules/ACME/Vpc/AWS/versions')).text()).toBe(await (await get('/v1/modules/acme/vpc/aws/versions')).text());
    expect((await get('/v1/modules/my_team/net_base/google/versions')).status).toBe(200);
  });

  it('answers 404 {"errors"} for an unknown module', async () => {
    const response = await get('/v1/modules/acme/nothing/aws/versions');
    expect(response.status).toBe(404);
    expect((await response.json<{ errors: string[] }>()).errors[0]).toContain('acme/nothing/aws');
  });
});

describe('GET /v1/modules/:namespace/:name/:system/:version/download', () => {
  it('answers 204 with X-Terraform-Get: the package path, which serves the published bytes', async () => {
    const location = await downloadLocation('/v1/modules/acme/vpc/aws/2.1.0/download');
    expect(location).toBe('/v1/module-archives/registry.example.com/acme/vpc/aws/2.1.0/vpc-aws-2.1.0.tar.gz');
    const archive = await get(new URL(location, `${ORIGIN}/v1/modules/acme/vpc/aws/2.1.0/download`).pathname);
    expect(archive.status).toBe(200);
    expect(archive.headers.get('content-type')).toBe('application/gzip');
    expect(archive.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(new Uint8Array(await archive.arrayBuffer())).toEqual(v210);
  });

  it('serves the package with HEAD, Range and If-None-Match like release files', async () => {
    const path = await downloadLocation('/v1/modules/acme/vpc/aws/2.1.0/download');
    const head = await get(path, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(v210.byteLength));
    const etag = head.headers.get('etag')!;
    const range = await get(path, { headers: { range: 'bytes=0-9' } });
    expect(range.status).toBe(206);
    expect(new Uint8Array(await range.arrayBuffer())).toEqual(v210.slice(0, 10));
    expect((await get(path, { headers: { 'if-none-match': etag } })).status).toBe(304);
  });

  it('makes the location absolute on ARCHIVE_BASE_URL when set', async () => {
    const response = await getWith({ ARCHIVE_BASE_URL: 'https://downloads.example.com/' }, '/v1/modules/acme/vpc/aws/2.0.0/download');
    expect(response.headers.get('x-terraform-get')).toBe(
      'https://downloads.example.com/v1/module-archives/registry.example.com/acme/vpc/aws/2.0.0/vpc-aws-2.0.0.tar.gz',
    );
  });

  it('answers 404 for an unknown version or module, and for a file name that is not the package', async () => {
    expect((await get('/v1/modules/acme/vpc/aws/9.9.9/download')).status).toBe(404);
    expect((await get('/v1/modules/acme/nothing/aws/1.0.0/download')).status).toBe(404);
    expect((await get('/v1/module-archives/registry.example.com/acme/vpc/aws/2.1.0/other.tar.gz')).status).toBe(404);
    expect((await get('/v1/module-archives/registry.example.com/acme/vpc/aws/2.1.0/vpc-aws-2.1.0.zip')).status).toBe(404);
    expect((await get('/v1/module-archives/registry.example.com/acme/vpc/aws/9.0.0/vpc-aws-9.0.0.tar.gz')).status).toBe(404);
  });

  it('makes at most one KV read per request, and none once cached (an unknown version: one each time, never remembered as absent)', async () => {
    const { kv, reads } = countingKv();
    const overrides = { REGISTRY_KV: kv };
    for (const [path, cached] of [
      ['/v1/modules/acme/vpc/aws/versions', true],
      ['/v1/modules/acme/vpc/aws/2.0.3/download', true],
      ['/v1/modules/acme/vpc/aws/7.0.0/download', false],
    ] as const) {
      const before = reads();
      await getWith(overrides, path);
      expect(reads() - before).toBeLessThanOrEqual(1);
      const again = reads();
      await getWith(overrides, path);
      expect(reads() - again).toBe(cached ? 0 : 1);
    }
  });
});

describe('bad input to the module routes', () => {
  const cases: [string, string][] = [
    ['/v1/modules/-acme/vpc/aws/versions', 'namespace'],
    ['/v1/modules/acme/vpc_/aws/versions', 'name'],
    ['/v1/modules/acme/vpc/aws-x/versions', 'system'],
    ['/v1/modules/acme/vpc/a_b/versions', 'system'],
    [`/v1/modules/${'a'.repeat(65)}/vpc/aws/versions`, 'longer than 64'],
    ['/v1/modules/acme/vpc/aws/v2.1.0/download', 'semantic version'],
    ['/v1/modules/acme/vpc/aws/2.1/download', 'semantic version'],
    ['/v1/modules/acme/v%ZZ/aws/versions', 'percent-encoding'],
    ['/v1/modules/acme/v%00pc/aws/versions', 'name'],
    ['/v1/module-archives/registry.example.com/acme/vpc/aws/2.1/vpc-aws-2.1.tar.gz', 'semantic version'],
    ['/v1/module-archives/bad_host/acme/vpc/aws/2.1.0/vpc-aws-2.1.0.tar.gz', 'hostname'],
  ];
  for (const [path, message] of cases) {
    it(`400 for ${path.slice(0, 70)}`, async () => {
      const response = await get(path);
      expect(response.status).toBe(400);
      expect((await response.json<{ errors: string[] }>()).errors[0]).toContain(message);
    });
  }

  it('405 with Allow for other methods', async () => {
    for (const path of ['/v1/modules/acme/vpc/aws/versions', '/v1/modules/acme/vpc/aws/2.1.0/download', '/modules']) {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const response = await get(path, { method });
        expect(response.status).toBe(405);
        expect(response.headers.get('allow')).toBe('GET, HEAD');
      }
    }
  });

  it('HEAD answers like GET without a body', async () => {
    const response = await get('/v1/modules/acme/vpc/aws/versions', { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });
});

describe('a module with 1,000 versions', () => {
  const big = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'big', 'aws');
  const versions = Array.from({ length: 1000 }, (_, i) => `${Math.floor(i / 100)}.${Math.floor(i / 10) % 10}.${i % 10}`);

  beforeAll(async () => {
    for (const version of versions) {
      await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, big, version, { bytes: new Uint8Array([1, 2, 3]), rebuildIndex: false });
    }
    await rebuildModuleIndex({ kv: bindings.REGISTRY_KV, blobs: bindings.REGISTRY_R2 }, big, () => {});
  }, 120_000);

  it('lists all 1,000 versions newest first and downloads any of them', async () => {
    const body = await (await get('/v1/modules/acme/big/aws/versions')).json<{ modules: [{ versions: { version: string }[] }] }>();
    expect(body.modules[0].versions).toHaveLength(1000);
    expect(body.modules[0].versions[0]!.version).toBe('9.9.9');
    expect(body.modules[0].versions[999]!.version).toBe('0.0.0');
    expect(await downloadLocation('/v1/modules/acme/big/aws/4.5.6/download')).toContain('/big-aws-4.5.6.tar.gz');
  });

  it('renders its page with a bounded version list', async () => {
    const response = await get('/modules/acme/big/aws');
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('Versions (1000)');
    expect(html).toContain('and 800 older versions');
    expect(html).toContain('v9.9.9</span>');
    expect(html.length).toBeLessThan(100_000);
  });
});

describe('module pages', () => {
  it('/modules lists every module with its newest stable version', async () => {
    const response = await get('/modules');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toMatch(
      /<a class="card" href="\/modules\/acme\/vpc\/aws">\s*<div class="name">acme\/vpc\/aws<\/div>[\s\S]*?v2\.1\.0<\/span> <span class="muted">5 versions/,
    );
    expect(html).toContain('my_team/net_base/google');
  });

  it('a module page shows the module block, inputs, outputs, providers and the README', async () => {
    const html = await (await get('/modules/acme/vpc/aws')).text();
    expect(html).toContain('acme/vpc/aws <span class="badge accent">v2.1.0</span>');
    expect(html).toContain('source  = &quot;registry.example.com/acme/vpc/aws&quot;\n  version = &quot;~&gt; 2.1&quot;');
    expect(html).toContain('<code>cidr</code>');
    expect(html).toContain('CIDR &lt;b&gt;block&lt;/b&gt;');
    expect(html).toContain('the &quot;id&quot;');
    expect(html).toContain('<code>hashicorp/aws</code>');
    expect(html).toContain('<section class="readme"><h2>README</h2><p>Hello</p></section>');
    expect(html).toContain('href="/modules"');
  });

  it('a version page shows that version; unknown versions and modules get a 404 page; malformed parts a 400', async () => {
    expect(await (await get('/modules/acme/vpc/aws/2.0.3')).text()).toContain('v2.0.3</span>');
    const missing = await get('/modules/acme/vpc/aws/8.0.0');
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('has no version 8.0.0');
    expect((await get('/modules/acme/none/aws')).status).toBe(404);
    expect((await get('/modules/acme/vpc/aws/not-a-version')).status).toBe(400);
    expect((await get('/modules/acme/vpc/a-b')).status).toBe(400);
  });

  it('served from a hostname without a dot (localhost:8787), the snippet keeps the registry hostname and adds the CLI host block', async () => {
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
    const response = await worker.fetch(new Request('http://localhost:8787/modules/acme/vpc/aws') as never, bindings, ctx);
    const html = await response.text();
    expect(html).toContain('source  = &quot;registry.example.com/acme/vpc/aws&quot;');
    expect(html).toContain(
      'host &quot;registry.example.com&quot; {\n  services = {\n    &quot;modules.v1&quot;   = &quot;http://localhost:8787/v1/modules/&quot;\n    &quot;providers.v1&quot; = &quot;http://localhost:8787/v1/providers/&quot;',
    );
    expect(await (await get('/modules/acme/vpc/aws')).text()).not.toContain('host &quot;');
  });

  it('escapes publisher text everywhere and links providers of this registry to their pages', async () => {
    const evil = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'evil', 'aws');
    await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, evil, '1.0.0', {
      docs: fakeDocs({
        inputs: [
          {
            name: 'x',
            type: '<script>alert(1)</script>',
            default: '"<img src=x onerror=alert(1)>"',
            description: '<script>',
            sensitive: true,
            nullable: true,
            required: false,
            validations: 0,
          },
        ],
        providers: [{ name: 'own', source: 'registry.example.com/acme/thing', version: '"><script>' }],
        submodules: [{ path: 'modules/<sub>', inputs: [], outputs: [], providers: [], requiredVersion: null }],
      }),
    });
    const html = await (await get('/modules/acme/evil/aws')).text();
    expect(html).not.toMatch(/<script>|<img|<sub>/);
    expect(html).toContain('<a href="/providers/acme/thing"><code>registry.example.com/acme/thing</code></a>');
    expect(html).toContain('//modules/&lt;sub&gt;');
  });
});

describe('OpenTofu 1.12 module download form (public mode)', () => {
  it('OpenTofu ≥ 1.12 gets 200 JSON with use_registry_credentials: true; others keep 204 + X-Terraform-Get', async () => {
    const tofu = await get('/v1/modules/acme/vpc/aws/2.1.0/download', { headers: { 'user-agent': 'OpenTofu/1.12.1' } });
    expect(tofu.status).toBe(200);
    expect(await tofu.json()).toEqual({
      location: '/v1/module-archives/registry.example.com/acme/vpc/aws/2.1.0/vpc-aws-2.1.0.tar.gz',
      use_registry_credentials: true,
    });
    const older = await get('/v1/modules/acme/vpc/aws/2.1.0/download', { headers: { 'user-agent': 'OpenTofu/1.11.0' } });
    expect(older.status).toBe(204);
    expect(older.headers.get('x-terraform-get')).toBe('/v1/module-archives/registry.example.com/acme/vpc/aws/2.1.0/vpc-aws-2.1.0.tar.gz');
  });
});
