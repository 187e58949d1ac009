import { beforeAll, describe, expect, it } from 'vitest';
import { address, fakeRelease, get, getWith, seed } from './helpers';
import type { Env } from '../../src/env';

// As deployed: wrangler.toml's production environment turns compression on.
const PRODUCTION: Partial<Env> = { GZIP_DOCUMENTS: 'true' };
import { acceptsGzip } from '../../src/http/responses';
import { env } from 'cloudflare:workers';
import worker from '../../src/index';
import { downloadDocumentKey } from '../../src/store/layout';

const CTX = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;

const provider = address('acme', 'squeezed');
const PLATFORMS = ['linux_amd64', 'linux_arm64', 'darwin_amd64', 'darwin_arm64', 'windows_amd64', 'windows_386'];

beforeAll(async () => {
  await seed(['1.0.0', '1.1.0', '1.2.0', '1.3.0', '2.0.0'].map((v) => fakeRelease(provider, v, PLATFORMS)));
});

async function gunzip(response: Response): Promise<string> {
  return new Response(response.body!.pipeThrough(new DecompressionStream('gzip'))).text();
}

describe('gzip for clients that accept it (Terraform and OpenTofu always do)', () => {
  for (const path of ['/v1/providers/acme/squeezed/versions', '/v1/mirror/registry.example.com/acme/squeezed/1.2.0.json']) {
    it(`${path}: the same document, compressed, with Vary`, async () => {
      const plain = await getWith(PRODUCTION, path);
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(plain.headers.get('vary')).toBe('Accept-Encoding');
      const text = await plain.text();
      expect(text.length).toBeGreaterThan(1024);

      // Called directly, so the runtime's own fetch does not decompress it on the way.
      const compressed = await getWith(PRODUCTION, path, { headers: { 'accept-encoding': 'br, gzip' } });
      expect(compressed.status).toBe(200);
      expect(compressed.headers.get('content-encoding')).toBe('gzip');
      expect(compressed.headers.get('vary')).toBe('Accept-Encoding');
      expect(compressed.headers.get('content-type')).toBe('application/json');
      expect(await gunzip(compressed)).toBe(text);
    });

    it(`${path}: plain text when GZIP_DOCUMENTS is off (local dev), even to a gzip client`, async () => {
      const response = await get(path, { headers: { 'accept-encoding': 'gzip' } });
      expect(response.headers.get('content-encoding')).toBeNull();
      expect(JSON.parse(await response.text())).toBeTypeOf('object');
    });
  }

  for (const [what, path] of [
    ['a small document', '/v1/mirror/registry.example.com/acme/squeezed/index.json'],
    ['discovery', '/.well-known/terraform.json'],
  ] as const) {
    it(`sends ${what} compressed as well (once per isolate, not per request), and plain to a client without gzip`, async () => {
      const plain = await getWith(PRODUCTION, path);
      expect(plain.headers.get('content-encoding')).toBeNull();
      const text = await plain.text();
      expect(text.length).toBeLessThan(1024);
      const first = await getWith(PRODUCTION, path, { headers: { 'accept-encoding': 'gzip' } });
      expect(first.headers.get('content-encoding')).toBe('gzip');
      expect(first.headers.get('vary')).toBe('Accept-Encoding');
      expect(first.headers.get('content-type')).toBe('application/json');
      const bytes = new Uint8Array(await first.arrayBuffer());
      expect(await gunzip(new Response(bytes))).toBe(text);
      // The second answer is the kept copy: the very same bytes.
      const second = new Uint8Array(await (await getWith(PRODUCTION, path, { headers: { 'accept-encoding': 'gzip' } })).arrayBuffer());
      expect(second).toEqual(bytes);
    });
  }

  it('sends the download document (URLs absolute on the origin asked) compressed, per origin, and its bytes at rest unchanged', async () => {
    const path = '/v1/providers/acme/squeezed/1.2.0/download/linux/amd64';
    const gzipHeaders = { headers: { 'accept-encoding': 'gzip' } };
    const own = await getWith(PRODUCTION, path, gzipHeaders);
    expect(own.headers.get('content-encoding')).toBe('gzip');
    expect(own.headers.get('vary')).toBe('Accept-Encoding');
    const ownText = await gunzip(own);
    expect(JSON.parse(ownText).download_url).toMatch(/^https:\/\/registry\.example\.com\/v1\/archives\//);
    // Another origin of the same Worker gets its own URLs (a variant of its own), compressed as well.
    const other = await worker.fetch(new Request(`http://localhost:8787${path}`, gzipHeaders) as never, { ...env, ...PRODUCTION } as Env, CTX);
    expect(other.headers.get('content-encoding')).toBe('gzip');
    expect(JSON.parse(await gunzip(other)).download_url).toMatch(/^http:\/\/localhost:8787\/v1\/archives\//);
    // Asked again: the same bytes, from the same kept variant.
    expect(await gunzip(await getWith(PRODUCTION, path, gzipHeaders))).toBe(ownText);
    // What KV holds is still path-absolute.
    const stored = await env.REGISTRY_KV.get(downloadDocumentKey(provider, '1.2.0', { os: 'linux', arch: 'amd64' }), 'text');
    expect(JSON.parse(stored!).download_url).toMatch(/^\/v1\/archives\//);

    const base = await getWith({ ...PRODUCTION, ARCHIVE_BASE_URL: 'https://dl.example.com' }, path, gzipHeaders);
    expect(base.headers.get('content-encoding')).toBe('gzip');
    expect(JSON.parse(await gunzip(base)).download_url).toMatch(/^https:\/\/dl\.example\.com\//);
  });

  it('reads Accept-Encoding as HTTP defines it', () => {
    expect(acceptsGzip('gzip')).toBe(true);
    expect(acceptsGzip('deflate, GZIP;q=0.5')).toBe(true);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('gzip; q=0.000')).toBe(false);
    expect(acceptsGzip('br, deflate')).toBe(false);
    expect(acceptsGzip('x-gzip2')).toBe(false);
    expect(acceptsGzip(null)).toBe(false);
  });
});
