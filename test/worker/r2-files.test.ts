import { env } from 'cloudflare:workers';
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import worker from '../../src/index';
import type { DownloadSummary } from '../../src/downloads/read';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env';
import { moduleAddress } from '../../src/protocol/modules-v1';
import { downloadDocumentKey } from '../../src/store/layout';
import { seedModule } from '../fixtures/modules';
import { address, fakeRelease, get, getWith, ORIGIN, seed } from './helpers';

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

describe('download counts with files from R2', () => {
  /** A request to the Worker with RELEASE_FILES=r2 and a real execution context, waited for (counts are sent after the response). */
  async function ask(path: string, init?: RequestInit): Promise<Response> {
    const ctx = createExecutionContext();
    const response = await worker.fetch(new Request(new URL(path, ORIGIN), init) as never, { ...bindings, ...R2 } as Env, ctx);
    await response.arrayBuffer();
    await waitOnExecutionContext(ctx);
    return response;
  }

  async function settled(path: string, want: number): Promise<DownloadSummary> {
    for (let i = 0; i < 60; i++) {
      if ((await (await get(path, { headers: { 'cache-control': 'no-cache' } })).json<DownloadSummary>()).total >= want) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await new Promise((resolve) => setTimeout(resolve, 700)); // an overshoot must be seen too
    return get(path).then((r) => r.json<DownloadSummary>());
  }

  it('counts a find-a-package GET and a module download, never a HEAD, and the archive route then counts nothing', async () => {
    const counted = address('acme', 'countedr2');
    await seed([fakeRelease(counted, '1.0.0', ['linux_amd64', 'darwin_arm64'])]);
    const countedModule = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'countedr2', 'aws');
    await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, countedModule, '1.0.0');
    const doc = (platform: string) => `/v1/providers/acme/countedr2/1.0.0/download/${platform.replace('_', '/')}`;
    for (const path of [doc('linux_amd64'), doc('linux_amd64'), doc('darwin_arm64')]) expect((await ask(path)).status).toBe(200);
    expect((await ask(doc('linux_amd64'), { method: 'HEAD' })).status).toBe(200);
    expect((await ask('/v1/archives/registry.example.com/acme/countedr2/1.0.0/terraform-provider-countedr2_1.0.0_linux_amd64.zip')).status).toBe(200);
    expect((await ask('/v1/modules/acme/countedr2/aws/1.0.0/download')).status).toBe(204);

    const providers = await settled('/v1/downloads/providers/acme/countedr2', 3);
    expect(providers).toMatchObject({ total: 3, versions: { '1.0.0': { total: 3, platforms: { linux_amd64: 2, darwin_arm64: 1 } } } });
    expect((await settled('/v1/downloads/modules/acme/countedr2/aws', 1)).total).toBe(1);
  });
});
