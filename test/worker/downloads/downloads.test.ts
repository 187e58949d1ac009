import { env } from 'cloudflare:workers';
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../../src/index';
import type { Env } from '../../../src/env';
import { moduleAddress } from '../../../src/protocol/modules-v1';
import type { DownloadSummary } from '../../../src/downloads/read';
import { seedModule } from '../../fixtures/modules';
import { address, fakeRelease, get, seed } from '../helpers';

/**
 * Download counts through the Worker as deployed: the archive routes, the
 * DOWNLOADS Durable Object of wrangler.toml (Miniflare's real SQLite-backed
 * object, not a stand-in), the JSON route and the pages. Increments reach the
 * object in batches after the response (waitUntil), so each test waits until
 * the count settles and then checks it is exact. The test project sends
 * every download at once (DOWNLOAD_BATCH_MS 0, vitest.config.ts); the
 * batching test below runs with the production window.
 */
const bindings = env as unknown as Env;

async function settled(path: string, want: number): Promise<DownloadSummary> {
  let last: DownloadSummary | null = null;
  for (let i = 0; i < 60; i++) {
    last = await (await get(path, { headers: { 'cache-control': 'no-cache' } })).json<DownloadSummary>();
    if (last.total >= want) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // A little longer: a count that overshoots must be seen too.
  await new Promise((resolve) => setTimeout(resolve, 700));
  return get(path).then((r) => r.json<DownloadSummary>());
}

describe('provider downloads', () => {
  it('counts each GET of an archive once per version and platform — edge-cache hits included — and nothing else', async () => {
    const provider = address('acme', 'counted');
    const [release] = await seed([fakeRelease(provider, '1.0.0', ['linux_amd64', 'darwin_arm64'])]);
    await seed([fakeRelease(provider, '1.1.0', ['linux_amd64'])]);
    const base = '/v1/archives/registry.example.com/acme/counted';
    const zip = (version: string, platform: string) => `${base}/${version}/terraform-provider-counted_${version}_${platform}.zip`;
    // 3 GETs of one archive (the first fills the edge cache, the others are served from it), 1 of another platform,
    // 2 of another version; HEADs, SHA256SUMS, a conditional 304 and a later range do not count.
    for (let i = 0; i < 3; i++) expect((await get(zip('1.0.0', 'linux_amd64'))).status).toBe(200);
    expect((await get(zip('1.0.0', 'darwin_arm64'))).status).toBe(200);
    await Promise.all([get(zip('1.1.0', 'linux_amd64')), get(zip('1.1.0', 'linux_amd64'))]).then((rs) => rs.forEach((r) => expect(r.status).toBe(200)));
    expect((await get(zip('1.0.0', 'linux_amd64'), { method: 'HEAD' })).status).toBe(200);
    expect((await get(`${base}/1.0.0/${release!.record.shasumsFilename}`)).status).toBe(200);
    const etag = (await get(zip('1.0.0', 'linux_amd64'), { method: 'HEAD' })).headers.get('etag')!;
    expect((await get(zip('1.0.0', 'linux_amd64'), { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await get(zip('1.0.0', 'linux_amd64'), { headers: { range: 'bytes=10-' } })).status).toBe(206);
    // A download resumed from byte 0 is one download.
    expect((await get(zip('1.0.0', 'darwin_arm64'), { headers: { range: 'bytes=0-' } })).status).toBe(206);

    const summary = await settled('/v1/downloads/providers/acme/counted', 7);
    expect(summary).toMatchObject({
      days: 30,
      total: 7,
      versions: {
        '1.0.0': { total: 5, platforms: { linux_amd64: 3, darwin_arm64: 2 } },
        '1.1.0': { total: 2, platforms: { linux_amd64: 2 } },
      },
    });
    expect(summary.daily).toEqual([{ day: new Date().toISOString().slice(0, 10), count: 7 }]);

    const page = await (await get('/providers/acme/counted/1.0.0', { headers: { accept: 'text/html' } })).text();
    expect(page).toMatch(/Downloads <span class="muted">\(last 30 days\)<\/span><\/dt><dd id="downloads"><strong>5<\/strong> of 1\.0\.0 · 7 of all versions/);
    expect(page).toMatch(/<strong>linux_amd64<\/strong>[\s\S]*?<td class="num">3<\/td>/);
  });

  it('answers 0 for a package never downloaded, and 400 for a bad window', async () => {
    expect(await (await get('/v1/downloads/providers/acme/never')).json()).toMatchObject({ total: 0, versions: {}, daily: [] });
    expect((await get('/v1/downloads/providers/acme/never?days=0')).status).toBe(400);
    expect((await get('/v1/downloads/providers/acme/never?days=abc')).status).toBe(400);
    expect((await get('/v1/downloads/providers/ac%2Fme/never')).status).toBe(400);
  });
});

describe('mirrored provider downloads', () => {
  it('counts GETs of a mirrored archive under its upstream address, shown on the mirror page and in the mirror JSON route', async () => {
    const upstream = address('hashicorp', 'countme', 'registry.terraform.io');
    await seed([fakeRelease(upstream, '3.2.1', ['linux_amd64'])]);
    const zip = '/v1/archives/registry.terraform.io/hashicorp/countme/3.2.1/terraform-provider-countme_3.2.1_linux_amd64.zip';
    for (let i = 0; i < 3; i++) expect((await get(zip)).status).toBe(200);
    expect((await get(zip, { method: 'HEAD' })).status).toBe(200);
    const summary = await settled('/v1/downloads/mirror/registry.terraform.io/hashicorp/countme', 3);
    expect(summary).toMatchObject({ total: 3, versions: { '3.2.1': { total: 3, platforms: { linux_amd64: 3 } } } });
    // Not mixed up with a provider of this registry's own hostname of the same name.
    expect(await (await get('/v1/downloads/providers/hashicorp/countme')).json()).toMatchObject({ total: 0 });
    const page = await (await get('/mirror/registry.terraform.io/hashicorp/countme', { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('<strong>3</strong> of 3.2.1 · 3 of all versions');
    expect((await get('/v1/downloads/mirror/registry..io/hashicorp/countme')).status).toBe(400);
  });
});

describe('module downloads', () => {
  it('counts GETs of the package per version, shown on the module page', async () => {
    const net = moduleAddress(bindings.REGISTRY_HOSTNAME, 'acme', 'counted', 'aws');
    await seedModule(bindings.REGISTRY_KV, bindings.REGISTRY_R2, net, '1.0.0');
    const location = (await get('/v1/modules/acme/counted/aws/1.0.0/download')).headers.get('x-terraform-get')!;
    for (let i = 0; i < 4; i++) expect((await get(location)).status).toBe(200);
    expect((await get(location, { method: 'HEAD' })).status).toBe(200);
    const summary = await settled('/v1/downloads/modules/acme/counted/aws', 4);
    expect(summary).toMatchObject({ total: 4, versions: { '1.0.0': { total: 4, platforms: {} } } });
    const page = await (await get('/modules/acme/counted/aws', { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('<strong>4</strong> of 1.0.0 · 4 of all versions');
  });
});

describe('batching in the isolate (the production window, DOWNLOAD_BATCH_MS 500)', () => {
  it("sends a window's downloads of a package in one request to its object, with after-response work for the batch only, and loses none", async () => {
    const provider = address('acme', 'batched');
    await seed([fakeRelease(provider, '1.0.0', ['linux_amd64'])]);
    const path = '/v1/archives/registry.example.com/acme/batched/1.0.0/terraform-provider-batched_1.0.0_linux_amd64.zip';
    // The real binding, wrapped to count the requests made to the objects (stubs taken).
    let rpcs = 0;
    const real = bindings.DOWNLOADS!;
    const DOWNLOADS = new Proxy(real, {
      get(target, property) {
        const value = Reflect.get(target, property, target);
        if (property === 'get')
          return (...args: unknown[]) => {
            rpcs++;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const production = { ...bindings, DOWNLOADS, DOWNLOAD_BATCH_MS: '500' } as Env;
    const uncounted = { ...bindings, DOWNLOADS: undefined } as Env;
    let waits = 0;
    const download = async (env: Env = production) => {
      const ctx = createExecutionContext();
      const counted = {
        waitUntil: (p: Promise<unknown>) => {
          waits++;
          ctx.waitUntil(p);
        },
        passThroughOnException() {},
        props: {},
      } as unknown as ExecutionContext;
      const response = await worker.fetch(new Request(new URL(path, 'https://registry.example.com')) as never, env, counted);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      return ctx;
    };
    // A lone download (it also fills the edge cache) is sent at once: no wait for a window.
    await waitOnExecutionContext(await download());
    expect(rpcs).toBe(1);
    // The archive route's own after-response work (other than counting), per download, as a baseline.
    const burst = async (env: Env) => {
      waits = 0;
      const contexts = await Promise.all(Array.from({ length: 20 }, () => download(env)));
      await Promise.all(contexts.map((ctx) => waitOnExecutionContext(ctx)));
      return waits;
    };
    const baseline = await burst(uncounted);
    // 20 at once, all edge-cache hits inside the window the first send opened: one batch, sent when it ends.
    const batches = (await burst(production)) - baseline;
    expect(batches, 'requests that registered counting work after their response').toBeGreaterThanOrEqual(1);
    expect(batches).toBeLessThanOrEqual(2); // 1 unless the machine stalls 500 ms mid-burst
    expect(rpcs, 'requests to the Durable Object').toBe(1 + batches);
    const summary = await settled('/v1/downloads/providers/acme/batched', 21);
    expect(summary).toMatchObject({ total: 21, versions: { '1.0.0': { total: 21, platforms: { linux_amd64: 21 } } } });
  });
});
