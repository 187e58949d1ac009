import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env';
import { moduleAddress } from '../../src/protocol/modules-v1';
import { downloadDocumentKey } from '../../src/store/layout';
import { seedModule } from '../fixtures/modules';
import { address, fakeRelease, get, getWith, seed } from './helpers';

// RELEASE_FILES=r2 (issue 38): download documents point release files and module packages at presigned R2 S3
// URLs. That they pass an independent SigV4 check and real terraform installs through them:
// test/e2e/r2-files.test.ts; here: what the Worker answers.

const bindings = env as unknown as Env;
const R2: Partial<Env> = {
  RELEASE_FILES: 'r2',
  R2_ENDPOINT: 'https://0123456789abcdef0123456789abcdef.r2.cloudflarestorage.com',
  R2_BUCKET_NAME: 'edge-registry',
  R2_ACCESS_KEY_ID: 'AKIDEXAMPLEEXAMPLE12',
  R2_SECRET_ACCESS_KEY: 'secret-access-key-for-tests-0123456789abcdef',
};
const provider = address('acme', 'fromr2');
const module = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'net', 'aws');
const PRESIGNED =
  /^https:\/\/0123456789abcdef0123456789abcdef\.r2\.cloudflarestorage\.com\/edge-registry\/([^?]+)\?X-Amz-Expires=(\d+)&X-Amz-Date=(\d{8}T\d{6}Z)&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLEEXAMPLE12%2F\d{8}%2Fauto%2Fs3%2Faws4_request&X-Amz-SignedHeaders=host&X-Amz-Signature=[0-9a-f]{64}$/;

beforeAll(async () => {
  await seed([fakeRelease(provider, '1.0.0', ['linux_amd64', 'darwin_arm64'])]);
  await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, module, '1.0.0');
});

function presigned(url: string): { key: string; expires: number; date: string } {
  const match = PRESIGNED.exec(url);
  expect(match, url).not.toBeNull();
  return { key: decodeURIComponent(match![1]!), expires: Number(match![2]), date: match![3]! };
}

describe('release files straight from R2', () => {
  it('the download document points archive, SHA256SUMS and signature at presigned R2 URLs of their objects', async () => {
    const response = await getWith(R2, '/v1/providers/acme/fromr2/1.0.0/download/linux/amd64');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=60');
    const doc = await response.json<{ download_url: string; shasums_url: string; shasums_signature_url: string }>();
    const prefix = 'registry.example.com/acme/fromr2/1.0.0/';
    expect(presigned(doc.download_url).key).toBe(`${prefix}terraform-provider-fromr2_1.0.0_linux_amd64.zip`);
    expect(presigned(doc.shasums_url).key).toBe(`${prefix}terraform-provider-fromr2_1.0.0_SHA256SUMS`);
    expect(presigned(doc.shasums_signature_url).key).toBe(`${prefix}terraform-provider-fromr2_1.0.0_SHA256SUMS.sig`);
    // Valid SIGNED_URL_MINUTES (15) from the start of the signing window: never longer.
    expect(presigned(doc.download_url).expires).toBe(900);
    // The stored document is unchanged.
    const stored = await bindings.REGISTRY_KV.get(downloadDocumentKey(provider, '1.0.0', { os: 'linux', arch: 'amd64' }), 'text');
    expect(JSON.parse(stored!).download_url).toMatch(/^\/v1\/archives\//);
  });

  it('the mirror VERSION.json does the same for every platform', async () => {
    const body = await (await getWith(R2, '/v1/mirror/registry.example.com/acme/fromr2/1.0.0.json')).json<{ archives: Record<string, { url: string }> }>();
    expect(Object.keys(body.archives).sort()).toEqual(['darwin_arm64', 'linux_amd64']);
    for (const [platform, { url }] of Object.entries(body.archives)) expect(presigned(url).key).toMatch(new RegExp(`_${platform}\\.zip$`));
  });

  it('a module download points X-Terraform-Get at the package in R2', async () => {
    const response = await getWith(R2, '/v1/modules/acme/net/aws/1.0.0/download');
    expect(response.status).toBe(204);
    expect(presigned(response.headers.get('x-terraform-get')!).key).toBe('modules/registry.example.com/acme/net/aws/1.0.0/net-aws-1.0.0.tar.gz');
  });

  it('the Worker still serves the files itself (the default, and the fallback for old links)', async () => {
    const doc = await (await get('/v1/providers/acme/fromr2/1.0.0/download/linux/amd64')).json<{ download_url: string }>();
    expect(doc.download_url).toMatch(/^https:\/\/registry\.example\.com\/v1\/archives\//);
    const file = await getWith(R2, new URL(doc.download_url).pathname);
    expect(file.status).toBe(200);
    await file.arrayBuffer();
  });

  for (const [what, overrides, says] of [
    ['a missing secret', { ...R2, R2_SECRET_ACCESS_KEY: undefined }, 'R2_SECRET_ACCESS_KEY'],
    ['an http endpoint', { ...R2, R2_ENDPOINT: 'http://r2.example.com' }, 'must be https'],
    ['an unknown RELEASE_FILES', { RELEASE_FILES: 'cdn' }, 'RELEASE_FILES is "cdn"'],
  ] as const) {
    it(`${what} is a configuration error, never an unsigned or wrong URL`, async () => {
      const errors: string[] = [];
      const original = console.error;
      console.error = (...args: unknown[]) => errors.push(args.map(String).join(' '));
      try {
        const response = await getWith(overrides as Partial<Env>, '/v1/providers/acme/fromr2/1.0.0/download/linux/amd64');
        expect(response.status).toBeGreaterThanOrEqual(500);
        expect(await response.text()).not.toContain('X-Amz');
      } finally {
        console.error = original;
      }
      expect(errors.join('\n')).toContain(says);
    });
  }
});
