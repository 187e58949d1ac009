import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env';
import { configProblems } from '../../src/config';
import { storeFromEnv } from '../../src/store/store';
import { publishVersions } from '../../src/store/providers/write';
import { removeMirroredVersion } from '../../src/store/mirror/remove';
import { staticDocumentKey } from '../../src/store/layout';
import { forgetIsolateDocuments } from '../../src/store/read-document';
import { writeAllStaticCopies } from '../../src/store/static-documents';
import { forgetFilesOriginReady, markFilesOriginReady } from '../../src/store/files-origin-ready';
import { filesOriginReadyKey } from '../../src/store/layout';
import { address, fakeRelease, getWith, ORIGIN } from './helpers';
import { bearer, buildRelease, HOST, issue, manifestOf, registerFixtureKey, type BuiltRelease, type Session } from './publish/api';
import { signRelease } from '../fixtures/release';

// PUBLIC_DOCUMENTS=r2 (issue 38): every write of a providers.v1 or mirror document also writes its static copy on
// the R2 bucket, served by the bucket's public custom domain (FILES_ORIGIN). Here, with Miniflare's real KV and R2,
// through the Worker's own publish and lifecycle API: the static objects hold exactly the bytes the Worker answers
// for the same routes, with the same absolute files-origin URLs. That real terraform installs from them:
// test/e2e/static-documents.test.ts.

const bindings = env as unknown as Env;
const FILES = 'https://files.example.com';
const PUBLIC: Partial<Env> = { PUBLIC_DOCUMENTS: 'r2', FILES_ORIGIN: FILES };
const on = { ...bindings, ...PUBLIC } as Env;

/** The static copy behind a Worker route (the path on the files origin), or null when there is none. */
async function staticObject(key: string): Promise<{ text: string; contentType?: string; cacheControl?: string } | null> {
  const object = await bindings.REGISTRY_R2.get(key);
  if (!object) return null;
  return { text: await object.text(), contentType: object.httpMetadata?.contentType, cacheControl: object.httpMetadata?.cacheControl };
}

/** Asserts the static copy of the Worker route `path` (named `key` on the files origin) equals the Worker's answer, byte for byte. */
async function expectSameAsWorker(path: string, key: string): Promise<string> {
  // The Worker's isolate keeps a list up to INDEX_CACHE_SECONDS (the static copy is current at once): compare with a fresh isolate's answer.
  forgetIsolateDocuments();
  const served = await getWith(PUBLIC, path);
  expect(served.status, path).toBe(200);
  const text = await served.text();
  const copy = await staticObject(key);
  expect(copy, key).not.toBeNull();
  expect(copy!.text).toBe(text);
  expect(copy!.contentType).toBe('application/json');
  expect(copy!.cacheControl).toBe('no-cache');
  return text;
}

async function publish(token: string, release: BuiltRelease): Promise<void> {
  const started = await getWith(PUBLIC, `/v1/publish/providers/acme/${release.type}/${release.version}`, {
    method: 'POST',
    headers: bearer(token, { 'content-type': 'application/json' }),
    body: JSON.stringify(await manifestOf(release)),
  });
  expect(started.status, await started.clone().text()).toBe(201);
  const session = (await started.json()) as Session;
  for (const file of session.files) {
    const bytes = release.files.get(file.filename)!;
    const put = await getWith(PUBLIC, file.url, { method: 'PUT', headers: bearer(token, { 'content-length': String(bytes.byteLength) }), body: bytes });
    expect(put.status).toBe(200);
  }
  const committed = await getWith(PUBLIC, session.commit_url, { method: 'POST', headers: bearer(token) });
  expect(committed.status, await committed.clone().text()).toBe(200);
}

async function lifecycle(token: string, type: string, body: object): Promise<void> {
  const response = await getWith(PUBLIC, `/v1/publish/lifecycle/providers/acme/${type}`, {
    method: 'POST',
    headers: bearer(token, { 'content-type': 'application/json' }),
    body: JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBe(200);
}

const versionsKey = (type: string) => `v1/providers/${HOST}/acme/${type}/versions`;
const downloadKey = (type: string, version: string, os: string, arch: string) => `v1/providers/${HOST}/acme/${type}/${version}/download/${os}/${arch}`;

describe('PUBLIC_DOCUMENTS=r2: static copies of the public documents', () => {
  let token = '';
  beforeAll(async () => {
    // What `npm run static-documents` writes once FILES_ORIGIN passed its check (test/scripts/static-documents.test.ts).
    await markFilesOriginReady(bindings.REGISTRY_KV, FILES);
    forgetFilesOriginReady();
    await registerFixtureKey('acme');
    token = (await issue('publish', ['acme/static'])).token;
  });

  it('a publish writes the versions list, every download document and the mirror documents, each equal to what the Worker serves', async () => {
    await publish(token, await buildRelease('static', '1.0.0', { platforms: ['linux_amd64', 'darwin_arm64'] }));
    const list = await expectSameAsWorker('/v1/providers/acme/static/versions', versionsKey('static'));
    expect(JSON.parse(list).versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
    for (const [os, arch] of [
      ['linux', 'amd64'],
      ['darwin', 'arm64'],
    ]) {
      const text = await expectSameAsWorker(`/v1/providers/acme/static/1.0.0/download/${os}/${arch}`, downloadKey('static', '1.0.0', os!, arch!));
      const doc = JSON.parse(text) as { download_url: string; shasums_url: string; shasums_signature_url: string };
      // The files on the files origin, at their object keys: no Worker request for them.
      expect(doc.download_url).toBe(`${FILES}/${HOST}/acme/static/1.0.0/terraform-provider-static_1.0.0_${os}_${arch}.zip`);
      expect(doc.shasums_url).toBe(`${FILES}/${HOST}/acme/static/1.0.0/terraform-provider-static_1.0.0_SHA256SUMS`);
      expect(doc.shasums_signature_url).toBe(`${FILES}/${HOST}/acme/static/1.0.0/terraform-provider-static_1.0.0_SHA256SUMS.sig`);
      // …and each is an object of the bucket (what the custom domain serves).
      expect(await bindings.REGISTRY_R2.head(new URL(doc.download_url).pathname.slice(1))).not.toBeNull();
    }
    await expectSameAsWorker(`/v1/mirror/${HOST}/acme/static/index.json`, `v1/mirror/${HOST}/acme/static/index.json`);
    const version = JSON.parse(await expectSameAsWorker(`/v1/mirror/${HOST}/acme/static/1.0.0.json`, `v1/mirror/${HOST}/acme/static/1.0.0.json`));
    expect(version.archives.linux_amd64.url).toBe(`${FILES}/${HOST}/acme/static/1.0.0/terraform-provider-static_1.0.0_linux_amd64.zip`);
    // The KV documents are unchanged: path-absolute URLs, as without the setting.
    const stored = await bindings.REGISTRY_KV.get(`v1/providers/${HOST}/acme/static/1.0.0/download/linux_amd64`, 'text');
    expect(JSON.parse(stored!).download_url).toMatch(/^\/v1\/archives\//);
  });

  it('deprecate, withdraw and restore rewrite the static lists at once: the withdrawn version leaves them, its download documents stay', async () => {
    await publish(token, await buildRelease('static', '1.1.0', { platforms: ['linux_amd64'] }));
    expect(JSON.parse((await staticObject(versionsKey('static')))!.text).versions).toHaveLength(2);

    await lifecycle(token, 'static', { action: 'deprecate', version: '1.0.0', message: 'use 1.1.0' });
    const deprecated = await expectSameAsWorker('/v1/providers/acme/static/versions', versionsKey('static'));
    expect(JSON.parse(deprecated).warnings?.join(' ') ?? '').toContain('use 1.1.0');

    await lifecycle(token, 'static', { action: 'withdraw', version: '1.1.0', message: 'bad build' });
    const withdrawn = await expectSameAsWorker('/v1/providers/acme/static/versions', versionsKey('static'));
    expect(JSON.parse(withdrawn).versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0']);
    const index = await expectSameAsWorker(`/v1/mirror/${HOST}/acme/static/index.json`, `v1/mirror/${HOST}/acme/static/index.json`);
    expect(Object.keys(JSON.parse(index).versions)).toEqual(['1.0.0']);
    // As the Worker keeps answering a withdrawn version's download document (lock files pinned to it), so does R2.
    await expectSameAsWorker('/v1/providers/acme/static/1.1.0/download/linux/amd64', downloadKey('static', '1.1.0', 'linux', 'amd64'));

    await lifecycle(token, 'static', { action: 'restore', version: '1.1.0' });
    const restored = await expectSameAsWorker('/v1/providers/acme/static/versions', versionsKey('static'));
    expect(JSON.parse(restored).versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0', '1.1.0']);
  });

  it('discovery points providers.v1 at the static documents on the files origin; modules.v1 stays on the Worker', async () => {
    const body = await (await getWith(PUBLIC, '/.well-known/terraform.json')).json<Record<string, string>>();
    expect(body['providers.v1']).toBe(`${FILES}/v1/providers/${HOST}/`);
    expect(body['modules.v1']).toBe('/v1/modules/');
    // Without the setting: path-absolute, as before.
    expect((await (await getWith({}, '/.well-known/terraform.json')).json<Record<string, string>>())['providers.v1']).toBe('/v1/providers/');
  });

  it('a mirror import and a mirror removal write and delete the static copies of another hostname (the same store writer)', async () => {
    const upstream = address('hashicorp', 'staticmirror', 'registry.terraform.io');
    const releases = [fakeRelease(upstream, '2.0.0', ['linux_amd64']), fakeRelease(upstream, '2.1.0', ['linux_amd64'])];
    await Promise.all(releases.map(signRelease));
    await publishVersions(storeFromEnv(on), releases);
    const prefix = 'v1/mirror/registry.terraform.io/hashicorp/staticmirror';
    await expectSameAsWorker(`/${prefix}/index.json`, `${prefix}/index.json`);
    await expectSameAsWorker(`/${prefix}/2.0.0.json`, `${prefix}/2.0.0.json`);

    await removeMirroredVersion(storeFromEnv(on), upstream, '2.0.0', HOST);
    expect(Object.keys(JSON.parse((await staticObject(`${prefix}/index.json`))!.text).versions)).toEqual(['2.1.0']);
    expect(await staticObject(`${prefix}/2.0.0.json`)).toBeNull();
    expect(await staticObject(`v1/providers/registry.terraform.io/hashicorp/staticmirror/2.0.0/download/linux/amd64`)).toBeNull();
    await removeMirroredVersion(storeFromEnv(on), upstream, '2.1.0', HOST);
    expect(await staticObject(`${prefix}/index.json`)).toBeNull();
  });

  it('writeAllStaticCopies backfills a registry published before the setting was on', async () => {
    const before = address('acme', 'staticlater');
    const release = fakeRelease(before, '0.1.0', ['linux_amd64']);
    await signRelease(release);
    await publishVersions(storeFromEnv(bindings), [release]); // the setting off: no copies
    expect(await staticObject(versionsKey('staticlater'))).toBeNull();
    const written = await writeAllStaticCopies(storeFromEnv(bindings), { filesOrigin: FILES });
    expect(written).toBeGreaterThanOrEqual(4);
    await expectSameAsWorker('/v1/providers/acme/staticlater/versions', versionsKey('staticlater'));
    await expectSameAsWorker('/v1/providers/acme/staticlater/0.1.0/download/linux/amd64', downloadKey('staticlater', '0.1.0', 'linux', 'amd64'));
  });

  it('in a publish, every download document and VERSION.json are written before the lists that name the version', async () => {
    // The real R2 binding, its puts of static copies noted in order (every call goes through to Miniflare's R2).
    const order: string[] = [];
    const recording = new Proxy(bindings.REGISTRY_R2, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (name !== 'put') return typeof value === 'function' ? value.bind(target) : value;
        return (key: string, ...rest: unknown[]) => {
          if (key.startsWith('v1/')) order.push(key);
          return (value as (...args: unknown[]) => unknown).call(target, key, ...rest);
        };
      },
    });
    const ordered = address('acme', 'staticorder');
    const release = fakeRelease(ordered, '1.0.0', ['linux_amd64', 'darwin_arm64']);
    await signRelease(release);
    await publishVersions(storeFromEnv({ ...on, REGISTRY_R2: recording } as Env), [release]);
    const lists = [`v1/mirror/${HOST}/acme/staticorder/index.json`, versionsKey('staticorder')];
    const documents = [
      downloadKey('staticorder', '1.0.0', 'linux', 'amd64'),
      downloadKey('staticorder', '1.0.0', 'darwin', 'arm64'),
      `v1/mirror/${HOST}/acme/staticorder/1.0.0.json`,
    ];
    expect(new Set(order)).toEqual(new Set([...documents, ...lists]));
    const firstList = Math.min(...lists.map((key) => order.indexOf(key)));
    for (const key of documents) expect(order.indexOf(key), key).toBeLessThan(firstList);
  });

  it('copies nothing but the public documents', () => {
    expect(staticDocumentKey(`v1/providers/${HOST}/acme/x/1.0.0/download/linux_amd64`)).toBe(`v1/providers/${HOST}/acme/x/1.0.0/download/linux/amd64`);
    for (const key of [
      `records/${HOST}/acme/x/1.0.0`,
      `pages/providers/${HOST}/acme/x`,
      'tokens/abc',
      `v1/modules/${HOST}/acme/vpc/aws/versions`,
      'mirror-policy',
    ]) {
      expect(staticDocumentKey(key), key).toBeNull();
    }
  });
});

describe('PUBLIC_DOCUMENTS=r2 before `npm run static-documents` checked its files origin', () => {
  const LATER = 'https://files-later.example.com';
  const MIRROR_VERSION = `/v1/mirror/${HOST}/acme/static/1.0.0.json`;

  /** The real KV binding, its reads of the marker counted (every call goes through to Miniflare's KV). */
  function countingMarkerReads(): { kv: KVNamespace; reads: () => number } {
    let reads = 0;
    const kv = new Proxy(bindings.REGISTRY_KV, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (name !== 'get') return typeof value === 'function' ? value.bind(target) : value;
        return (key: string, ...rest: unknown[]) => {
          if (key === filesOriginReadyKey) reads++;
          return (value as (...args: unknown[]) => unknown).call(target, key, ...rest);
        };
      },
    });
    return { kv, reads: () => reads };
  }

  /** Discovery's providers.v1, a download document's download_url and VERSION.json's archive URL, as the Worker answers them. */
  async function served(vars: Partial<Env>): Promise<string[]> {
    const discovery = await (await getWith(vars, '/.well-known/terraform.json')).json<Record<string, string>>();
    const download = await (await getWith(vars, '/v1/providers/acme/static/1.0.0/download/linux/amd64')).json<{ download_url: string }>();
    const version = await (await getWith(vars, MIRROR_VERSION)).json<{ archives: Record<string, { url: string }> }>();
    return [discovery['providers.v1']!, download.download_url, version.archives.linux_amd64!.url];
  }

  it('the Worker names the files origin only once the marker names it, reading the marker once per isolate', async () => {
    const counting = countingMarkerReads();
    const later: Partial<Env> = { PUBLIC_DOCUMENTS: 'r2', FILES_ORIGIN: LATER, REGISTRY_KV: counting.kv };
    const file = `${HOST}/acme/static/1.0.0/terraform-provider-static_1.0.0_linux_amd64.zip`;
    try {
      // Deployed with the setting, the domain not checked yet (the marker names another origin): every answer the
      // Worker's own, as without the setting — the release files on the Worker, discovery path-absolute.
      forgetFilesOriginReady();
      for (let i = 0; i < 20; i++) expect(await served(later)).toEqual(['/v1/providers/', `${ORIGIN}/v1/archives/${file}`, `/v1/archives/${file}`]);
      expect(counting.reads()).toBe(1);
      // `npm run static-documents` passed for it: an isolate that reads the marker from then on (a fresh one, or
      // one whose FILES_ORIGIN_RECHECK_MS ran out) names the files origin everywhere.
      await markFilesOriginReady(bindings.REGISTRY_KV, LATER);
      forgetFilesOriginReady();
      for (let i = 0; i < 20; i++) expect(await served(later)).toEqual([`${LATER}/v1/providers/${HOST}/`, `${LATER}/${file}`, `${LATER}/${file}`]);
      expect(counting.reads()).toBe(2);
    } finally {
      await markFilesOriginReady(bindings.REGISTRY_KV, FILES);
      forgetFilesOriginReady();
    }
  });

  it('an unreadable marker counts as not checked: the Worker serves', async () => {
    await bindings.REGISTRY_KV.put(filesOriginReadyKey, 'not json');
    forgetFilesOriginReady();
    try {
      expect((await served(PUBLIC))[0]).toBe('/v1/providers/');
    } finally {
      await markFilesOriginReady(bindings.REGISTRY_KV, FILES);
      forgetFilesOriginReady();
    }
  });
});

describe('PUBLIC_DOCUMENTS refusals', () => {
  for (const [what, vars, says] of [
    ['private mode', { ACCESS: 'private', PUBLIC_DOCUMENTS: 'r2', FILES_ORIGIN: FILES }, 'needs ACCESS = "public"'],
    ['no FILES_ORIGIN', { ACCESS: 'public', PUBLIC_DOCUMENTS: 'r2' }, 'needs FILES_ORIGIN'],
    ['an http FILES_ORIGIN', { ACCESS: 'public', PUBLIC_DOCUMENTS: 'r2', FILES_ORIGIN: 'http://files.example.com' }, 'must be https'],
    ['a FILES_ORIGIN with a path', { ACCESS: 'public', PUBLIC_DOCUMENTS: 'r2', FILES_ORIGIN: 'https://files.example.com/bucket' }, 'origin only'],
    ['an unknown PUBLIC_DOCUMENTS', { ACCESS: 'public', PUBLIC_DOCUMENTS: 'cdn' }, 'PUBLIC_DOCUMENTS is "cdn"'],
  ] as const) {
    it(`${what}: listed as a problem naming the fix`, () => {
      const problems = configProblems({ REGISTRY_HOSTNAME: 'registry.example.com', ...vars });
      expect(problems.map((p) => p.message).join('\n')).toContain(says);
    });
  }

  it('public mode with a broken setting: discovery answers 503 naming it, a publish writes no document', async () => {
    const broken: Partial<Env> = { PUBLIC_DOCUMENTS: 'r2', FILES_ORIGIN: 'http://files.example.com' };
    const response = await getWith(broken, '/.well-known/terraform.json');
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('FILES_ORIGIN');
    const release = fakeRelease(address('acme', 'staticbroken'), '1.0.0', ['linux_amd64']);
    await signRelease(release);
    await expect(publishVersions(storeFromEnv({ ...bindings, ...broken } as Env), [release])).rejects.toThrow(/FILES_ORIGIN/);
    expect(await bindings.REGISTRY_KV.get(`v1/providers/${HOST}/acme/staticbroken/1.0.0/download/linux_amd64`)).toBeNull();
  });

  it('private mode with the setting: the Worker keeps serving documents itself (discovery unchanged) and writes none', async () => {
    const body = await (await getWith({ ...PUBLIC, ACCESS: 'private' }, '/.well-known/terraform.json')).json<Record<string, string>>();
    expect(body['providers.v1']).toBe('/v1/providers/');
    // …and writes no document: a private registry's metadata never goes to the public domain.
    const release = fakeRelease(address('acme', 'staticprivate'), '1.0.0', ['linux_amd64']);
    await signRelease(release);
    await expect(publishVersions(storeFromEnv({ ...on, ACCESS: 'private' } as Env), [release])).rejects.toThrow(/needs ACCESS = "public"/);
    expect(await staticObject(downloadKey('staticprivate', '1.0.0', 'linux', 'amd64'))).toBeNull();
  });
});
