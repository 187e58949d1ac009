import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { address, countingKv, fakeRelease, get, getWith, seed } from '../helpers';
import { rebuildProviderIndex } from '../../../src/store/providers/write';
import { providerPageData, writeVersionDocs } from '../../../src/store/pages/write';
import { providerPageKey } from '../../../src/store/layout';
import { fromCodeSpec } from '../../../scripts/lib/provider/docs/code-spec';
import { demoCodeSpec } from '../../../scripts/lib/demo/provider-docs';
import { TEST_KEY } from '../../fixtures/release';

// Pages for people, public mode: what a browser gets for each page.
const example = address('demo', 'example');
const evil = address('evil', 'thing');
const upstream = address('hashicorp', 'random', 'registry.terraform.io');
const HTML = { headers: { accept: 'text/html' } };

async function page(path: string, init: RequestInit = HTML): Promise<{ response: Response; body: string }> {
  const response = await get(path, init);
  return { response, body: await response.text() };
}

beforeAll(async () => {
  await seed([
    fakeRelease(example, '1.0.0'),
    fakeRelease(example, '1.2.0', ['linux_amd64', 'darwin_arm64']),
    fakeRelease(example, '1.10.1'),
    fakeRelease(example, '2.0.0-beta.1', ['linux_amd64'], { protocols: ['6.0'] }),
    fakeRelease(upstream, '3.6.0', ['linux_amd64']),
  ]);
  await writeVersionDocs(env.REGISTRY_KV, example, '1.10.1', fromCodeSpec(demoCodeSpec('1.10.1'), 'spec.json', 'example'));
  await rebuildProviderIndex({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, example, () => {});
  // A publisher who writes markup where text belongs.
  await seed([fakeRelease(evil, '1.0.0')]);
  const spec = {
    version: '0.1',
    provider: { name: 'thing', description: '<script>alert(1)</script> see <a href="javascript:alert(2)">docs</a> </textarea><img src=x onerror=alert(3)>' },
    resources: [
      {
        name: 'x',
        description: '"><script>alert(4)</script>',
        schema: {
          attributes: [
            { name: 'a', string: { computed_optional_required: 'required', description: 'javascript:alert(5) </textarea><script>alert(6)</script>' } },
          ],
        },
      },
    ],
  };
  await writeVersionDocs(env.REGISTRY_KV, evil, '1.0.0', fromCodeSpec(spec, 'spec.json', 'thing'));
  await rebuildProviderIndex({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, evil, () => {});
});

describe('GET /', () => {
  it('lists our providers and, apart, mirrored ones, with latest stable version and description, as HTML with security headers', async () => {
    const { response, body } = await page('/');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('referrer-policy')).toBe('same-origin');
    expect(body).toContain('href="/providers/demo/example"');
    expect(body).toContain('v1.10.1');
    expect(body).toContain('Servers, networks, buckets and images');
    expect(body.indexOf('Mirrored providers')).toBeGreaterThan(body.indexOf('demo/example'));
    expect(body).toContain('href="/mirror/registry.terraform.io/hashicorp/random"');
    expect(body).not.toMatch(/<script>|<style>|style="/);
  });

  it('filters with ?q= on the server (the form works without JavaScript)', async () => {
    const { body } = await page('/?q=random');
    expect(body).toContain('hashicorp/random');
    expect(body).not.toContain('href="/providers/demo/example"');
    expect(body).toContain('value="random"');
  });
});

describe('GET /providers/:namespace/:type[/:version]', () => {
  it('shows the newest stable version with snippets that work against this host', async () => {
    const { response, body } = await page('/providers/demo/example');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=5');
    expect(body).toContain('v1.10.1');
    expect(body).toContain(`terraform {
  required_providers {
    example = {
      source  = &quot;registry.example.com/demo/example&quot;
      version = &quot;~&gt; 1.10&quot;
    }
  }
}`);
    expect(body).toContain('url = &quot;https://registry.example.com/v1/mirror/&quot;');
    expect(body).not.toContain('credentials');
    // Versions newest first, the prerelease marked.
    const order = ['2.0.0-beta.1', '1.10.1', '1.2.0', '1.0.0'].map((v) => body.indexOf(`>${v}</a>`));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(body).toMatch(/2\.0\.0-beta\.1<\/a> <span class="badge pre">pre<\/span>/);
    expect(body).toContain('href="/providers/demo/example/1.10.1/docs"');
  });

  it('shows a version: date, protocols, platforms with size and zh/h1 hashes, the signing key and a link to it', async () => {
    const record = fakeRelease(example, '1.2.0', ['linux_amd64', 'darwin_arm64']).record;
    const { body } = await page('/providers/demo/example/1.2.0');
    expect(body).toContain('<time datetime="2026-11-21T00:00:00.000Z">2026-11-21</time>');
    for (const p of record.packages) {
      expect(body).toContain(`zh:${p.shasum}`);
      expect(body).toContain(p.h1);
      expect(body).toContain(p.filename);
    }
    expect(body).toContain('1.0 KiB');
    expect(body).toContain(TEST_KEY.key_id);
    expect(body).toContain('version = &quot;~&gt; 1.2.0&quot;');
    expect(body).toContain('Not published for this version');
    const key = await get('/providers/demo/example/1.2.0/signing-key.asc');
    expect(key.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await key.text()).toBe(TEST_KEY.ascii_armor);
  });

  it('pins a prerelease exactly and marks it', async () => {
    const { body } = await page('/providers/demo/example/2.0.0-beta.1');
    expect(body).toContain('version = &quot;= 2.0.0-beta.1&quot;');
    expect(body).toContain('prerelease');
    expect(body).toContain('6.0');
  });

  it('redirects the no-JS version switcher (?version=) to the version page', async () => {
    const response = await get('/providers/demo/example?version=1.0.0', { ...HTML, redirect: 'manual' });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/providers/demo/example/1.0.0');
  });

  it('answers unknown providers and versions with an HTML 404, malformed ones with an HTML 400', async () => {
    for (const [path, status, text] of [
      ['/providers/demo/nothing', 404, 'no provider registry.example.com/demo/nothing'],
      ['/providers/demo/example/9.9.9', 404, 'has no version 9.9.9'],
      ['/providers/demo/example/v1.0', 400, 'not a semantic version'],
      ['/providers/-bad-/example', 400, 'invalid'],
      ['/providers/demo/example?version=latest', 400, 'not a semantic version'],
    ] as const) {
      const { response, body } = await page(path);
      expect(response.status, path).toBe(status);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(body.toLowerCase()).toContain(text.toLowerCase());
    }
  });
});

describe('mirror pages', () => {
  it('show what the mirror holds of an upstream provider, with its real address in the configuration', async () => {
    const { response, body } = await page('/mirror/registry.terraform.io/hashicorp/random');
    expect(response.status).toBe(200);
    expect(body).toContain('source  = &quot;registry.terraform.io/hashicorp/random&quot;');
    expect(body).toContain('url = &quot;https://registry.example.com/v1/mirror/&quot;');
    expect(body).toContain('linux_amd64');
    expect((await page('/mirror/registry.terraform.io/hashicorp/nothing')).response.status).toBe(404);
  });
});

describe('docs pages', () => {
  it('index the provider configuration, resources and data sources', async () => {
    const { response, body } = await page('/providers/demo/example/1.10.1/docs');
    expect(response.status).toBe(200);
    expect(body).toContain('provider &quot;example&quot; {');
    expect(body).toContain('href="/providers/demo/example/1.10.1/docs/resources/example_server"');
    expect(body).toContain('href="/providers/demo/example/1.10.1/docs/data-sources/example_image"');
    expect(body).toContain('api_token');
    expect(body).toContain('sensitive');
  });

  it('show every attribute and nested block with type, mode, sensitive, deprecation and description, and an example', async () => {
    const { body } = await page('/providers/demo/example/1.10.1/docs/resources/example_server');
    expect(body).toContain(`resource &quot;example_server&quot; &quot;example&quot; {
  name  = &quot;name&quot;
  image = &quot;image&quot;
}`);
    expect(body).toMatch(/tags<\/span> <code>map\(string\)<\/code>\s*<span class="badge">optional<\/span>/);
    expect(body).toMatch(/ports<\/span> <code>list\(number\)<\/code>/);
    expect(body).toMatch(/admin_password<\/span>[^]*?<span class="badge">sensitive<\/span>/);
    expect(body).toContain('public_ip is deprecated');
    expect(body).toMatch(/size_gb<\/span> <code>number<\/code>/);
    expect(body).toMatch(/network_interface<\/span> <code>list of blocks<\/code>/);
    expect(body).toContain('Read-only attributes');
    expect(body).toContain('optional, computed');
    const data = await page('/providers/demo/example/1.10.1/docs/data-sources/example_image');
    expect(data.body).toContain('data &quot;example_image&quot; &quot;example&quot;');
  });

  it('say how to add docs when a version has none, and 404 unknown resources', async () => {
    const none = await page('/providers/demo/example/1.2.0/docs');
    expect(none.response.status).toBe(404);
    expect(none.body).toContain('--docs');
    expect((await page('/providers/demo/example/1.10.1/docs/resources/example_nothing')).response.status).toBe(404);
  });
});

describe('escaping', () => {
  it("renders a publisher's <script>, javascript: link and </textarea> as inert text", async () => {
    for (const path of ['/', '/providers/evil/thing', '/providers/evil/thing/1.0.0/docs', '/providers/evil/thing/1.0.0/docs/resources/thing_x']) {
      const { body } = await page(path);
      expect(body, path).not.toMatch(/<script>|<img|<\/textarea>|href="javascript:/i);
      expect(body, path).toContain('&lt;script&gt;alert(');
    }
  });
});

describe('HTML 404 for browsers, JSON for API clients', () => {
  it('answers an unknown path in HTML when the client accepts text/html, in JSON otherwise; API routes stay JSON', async () => {
    const browser = await page('/no/such/page');
    expect(browser.response.status).toBe(404);
    expect(browser.response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(browser.body).toContain('There is no page at /no/such/page');
    const api = await get('/no/such/page');
    expect(api.headers.get('content-type')).toBe('application/json');
    const versions = await get('/v1/providers/demo/nothing/versions', HTML);
    expect(versions.headers.get('content-type')).toBe('application/json');
  });
});

describe('cost and size', () => {
  it('reads KV at most once per page on a cache miss', async () => {
    for (const path of [
      '/',
      '/providers/demo/example',
      '/providers/demo/example/1.0.0',
      '/providers/demo/example/1.10.1/docs',
      '/providers/demo/example/1.10.1/docs/resources/example_server',
      '/mirror/registry.terraform.io/hashicorp/random',
    ]) {
      const { kv, reads } = countingKv();
      const response = await getWith({ REGISTRY_KV: kv, INDEX_CACHE_SECONDS: '0' }, path, HTML);
      expect(response.status, path).toBe(200);
      expect(reads(), path).toBeLessThanOrEqual(1);
    }
  });

  it('gzips pages like documents when GZIP_DOCUMENTS is on and the client accepts gzip', async () => {
    const response = await getWith({ GZIP_DOCUMENTS: 'true' }, '/providers/demo/example', { headers: { accept: 'text/html', 'accept-encoding': 'gzip' } });
    expect(response.headers.get('content-encoding')).toBe('gzip');
  });

  it('renders a provider with 1,000 versions × 12 platforms within bounds', async () => {
    const big = address('acme', 'pages-huge');
    const platforms = ['linux', 'darwin', 'windows'].flatMap((os) => ['amd64', 'arm64', '386', 'arm'].map((arch) => `${os}_${arch}`));
    // Records as publish stores them (hashes are placeholders of the real lengths: the page only shows them).
    const template = fakeRelease(big, '0.0.0', ['linux_amd64']).record;
    const records = Array.from({ length: 1000 }, (_, i) => {
      const version = `${Math.floor(i / 100)}.${Math.floor(i / 10) % 10}.${i % 10}`;
      const packages = platforms.map((name) => {
        const [os, arch] = name.split('_') as [string, string];
        return {
          os,
          arch,
          filename: `terraform-provider-pages-huge_${version}_${name}.zip`,
          shasum: 'a'.repeat(64),
          h1: `h1:${'b'.repeat(43)}=`,
          size: 12_345_678,
        };
      });
      return { ...template, version, packages };
    });
    await env.REGISTRY_KV.put(providerPageKey(big), JSON.stringify(providerPageData(records, new Set(), 'big')));
    const started = Date.now();
    const { response, body } = await page('/providers/acme/pages-huge/5.5.5');
    const elapsed = Date.now() - started;
    expect(response.status).toBe(200);
    expect(body).toContain('9.9.9');
    expect((body.match(/<li/g) ?? []).length).toBeGreaterThanOrEqual(1000);
    expect(body.length).toBeLessThan(400_000);
    expect(elapsed).toBeLessThan(2000);
  });
});
