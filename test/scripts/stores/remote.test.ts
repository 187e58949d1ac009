import { randomBytes, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { AwsClient } from 'aws4fetch';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig, type RegistryConfig } from '../../../scripts/lib/config';
import { KvRestStore } from '../../../scripts/lib/stores/kv-rest';
import { R2S3Store } from '../../../scripts/lib/stores/r2-s3';
import { listAuditEntries } from '../../../src/store/audit/read';
import { legacyPublishersKey, publishersObject } from '../../../src/store/layout';
import { configPath, runScript, tempDir } from '../helpers';

// The mirror test's upstream GnuPG home and agent (loaded lazily there) go with this file.
afterAll(async () => (await import('../mirror/upstream')).releaseUpstreamGpgKey());

/**
 * --remote against real servers on this machine: R2's S3 API played by
 * s3rver (an S3 implementation, including multipart uploads), and the
 * Workers KV REST API played by a small HTTP server started here, which
 * records the requests so their shapes (paths, encoding, headers, bodies,
 * pagination) can be checked.
 */

const ACCOUNT = '0123456789abcdef0123456789abcdef';
const TOKEN = 'test-api-token-not-a-secret';
const S3_KEY = 'S3RVER';
const { dir, cleanup } = tempDir('remote');

interface Recorded {
  method: string;
  path: string;
  authorization?: string;
  contentType?: string;
  body: string;
}

/** The Workers KV REST API subset the scripts use, over an in-memory map (per namespace). */
class KvApiServer {
  readonly values = new Map<string, string>();
  readonly requests: Recorded[] = [];
  /** Answers the next N requests with this status first (429/500 to test retries). */
  failNext: { status: number; count: number } | null = null;
  server!: Server;
  base = '';

  async start(): Promise<void> {
    this.server = createServer(async (req, res) => {
      const body = await readBody(req);
      const url = new URL(req.url!, 'http://x');
      this.requests.push({ method: req.method!, path: req.url!, authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (this.failNext && this.failNext.count > 0) {
        this.failNext.count--;
        return json(this.failNext.status, { success: false, errors: [{ code: 10013, message: 'try again' }] });
      }
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return json(403, { success: false, errors: [{ code: 10000, message: 'Authentication error' }] });
      const match = /^\/client\/v4\/accounts\/([^/]+)\/storage\/kv\/namespaces\/([^/]+)\/(values\/([^/?]+)|keys)$/.exec(url.pathname);
      if (!match || match[1] !== ACCOUNT) return json(404, { success: false, errors: [{ code: 7003, message: 'No route' }] });
      const ns = match[2]!;
      if (match[3] === 'keys' && req.method === 'GET') {
        const prefix = `${ns}/${url.searchParams.get('prefix') ?? ''}`;
        const names = [...this.values.keys()].filter((k) => k.startsWith(prefix)).sort();
        const pageSize = Math.min(Number(url.searchParams.get('limit') ?? 1000), 3); // small pages: exercise cursors
        const start = Number(url.searchParams.get('cursor') || 0);
        const page = names.slice(start, start + pageSize);
        const cursor = start + pageSize < names.length ? String(start + pageSize) : '';
        return json(200, {
          success: true,
          errors: [],
          result: page.map((name) => ({ name: name.slice(ns.length + 1) })),
          result_info: { count: page.length, cursor },
        });
      }
      const key = `${ns}/${decodeURIComponent(match[4] ?? '')}`;
      if (req.method === 'GET') {
        if (!this.values.has(key)) return json(404, { success: false, errors: [{ code: 10009, message: 'get: key not found' }] });
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        return res.end(this.values.get(key));
      }
      if (req.method === 'PUT') {
        if (match[4]!.length > 512) return json(400, { success: false, errors: [{ code: 10033, message: 'key too long' }] });
        this.values.set(key, body);
        return json(200, { success: true, errors: [], result: {} });
      }
      if (req.method === 'DELETE') {
        this.values.delete(key);
        return json(200, { success: true, errors: [], result: {} });
      }
      return json(405, { success: false, errors: [{ code: 10000, message: 'method' }] });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/client/v4`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

let kvApi: KvApiServer;
let s3: S3rver;
let s3Front: Server;
let s3Endpoint: string;
/** "METHOD path?query" of every S3 request, recorded by a front server handing each to s3rver. */
const s3Requests: string[] = [];
let config: RegistryConfig;

beforeAll(async () => {
  kvApi = new KvApiServer();
  await kvApi.start();
  config = await readRegistryConfig({ configPath, env: 'production' });
  s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: join(dir, 's3'), configureBuckets: [{ name: config.bucketName, configs: [] }] });
  await s3.run();
  const handle = (s3 as unknown as { callback(): (req: IncomingMessage, res: unknown) => void }).callback();
  s3Front = createServer((req, res) => {
    s3Requests.push(`${req.method} ${req.url}`);
    handle(req, res);
  });
  await new Promise<void>((resolve) => s3Front.listen(0, '127.0.0.1', resolve));
  s3Endpoint = `http://127.0.0.1:${(s3Front.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await kvApi?.stop();
  await new Promise((resolve) => s3Front?.close(resolve));
  await s3?.close();
  cleanup();
});

const remoteEnv = () => ({
  CLOUDFLARE_ACCOUNT_ID: ACCOUNT,
  CLOUDFLARE_API_TOKEN: TOKEN,
  CLOUDFLARE_API_BASE_URL: kvApi.base,
  R2_ACCESS_KEY_ID: S3_KEY,
  R2_SECRET_ACCESS_KEY: S3_KEY,
  R2_ENDPOINT: s3Endpoint,
});

/** Reads an object back through the S3 API (a client of our own, not the adapter under test). */
async function s3Get(key: string): Promise<{ status: number; bytes: Buffer; etag: string | null }> {
  const client = new AwsClient({ accessKeyId: S3_KEY, secretAccessKey: S3_KEY, service: 's3', region: 'us-east-1' });
  const response = await client.fetch(`${s3Endpoint}/${config.bucketName}/${key.split('/').map(encodeURIComponent).join('/')}`);
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()), etag: response.headers.get('etag') };
}

describe('KvRestStore (Workers KV REST API)', () => {
  const store = () => new KvRestStore({ accountId: ACCOUNT, namespaceId: 'ns-shapes', apiToken: TOKEN, apiBaseUrl: kvApi.base });

  it('puts, gets and deletes values at /values/<url-encoded key> with the bearer token and a raw body', async () => {
    kvApi.requests.length = 0;
    const key = 'records/registry.example.com:8443/acme/x/1.0.0';
    await store().put(key, '{"a":1}');
    expect(await store().get(key, 'text')).toBe('{"a":1}');
    await store().delete(key);
    expect(await store().get(key, 'text')).toBeNull();
    const encoded =
      '/client/v4/accounts/0123456789abcdef0123456789abcdef/storage/kv/namespaces/ns-shapes/values/records%2Fregistry.example.com%3A8443%2Facme%2Fx%2F1.0.0';
    expect(kvApi.requests.map((r) => [r.method, r.path])).toEqual([
      ['PUT', encoded],
      ['GET', encoded],
      ['DELETE', encoded],
      ['GET', encoded],
    ]);
    expect(kvApi.requests.every((r) => r.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(kvApi.requests[0]!.body).toBe('{"a":1}');
    expect(kvApi.requests[0]!.contentType).toMatch(/^text\/plain/);
  });

  it('lists keys by prefix following cursors', async () => {
    const s = store();
    for (const n of [1, 2, 3, 4, 5, 6, 7]) await s.put(`list/p/${n}`, String(n));
    await s.put('list/q/1', 'other');
    kvApi.requests.length = 0;
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await s.list({ prefix: 'list/p/', ...(cursor ? { cursor } : {}) });
      names.push(...page.keys.map((k) => k.name));
      cursor = page.list_complete ? undefined : page.cursor;
    } while (cursor);
    expect(names).toEqual(['list/p/1', 'list/p/2', 'list/p/3', 'list/p/4', 'list/p/5', 'list/p/6', 'list/p/7']);
    expect(kvApi.requests).toHaveLength(3);
    expect(kvApi.requests[0]!.path).toBe(
      '/client/v4/accounts/0123456789abcdef0123456789abcdef/storage/kv/namespaces/ns-shapes/keys?prefix=list%2Fp%2F&limit=1000',
    );
    expect(kvApi.requests[1]!.path).toMatch(/&cursor=3$/);
  });

  it("retries 429 and 5xx answers, and reports other errors with the key and Cloudflare's message but never the token", async () => {
    kvApi.failNext = { status: 429, count: 2 };
    await store().put('retry/me', 'ok');
    expect(await store().get('retry/me', 'text')).toBe('ok');
    const bad = new KvRestStore({ accountId: ACCOUNT, namespaceId: 'ns-shapes', apiToken: 'wrong-token', apiBaseUrl: kvApi.base });
    const error = await bad.put('some/key', 'x').catch((e: Error) => e);
    expect(String(error)).toMatch(/KV PUT some\/key: HTTP 403 10000 Authentication error/);
    expect(String(error)).not.toContain('wrong-token');
  });
});

describe('R2S3Store (R2 S3 API) against s3rver', () => {
  const store = (tuning: { multipartThreshold?: number; partSize?: number } = {}) =>
    new R2S3Store({
      endpoint: s3Endpoint,
      bucket: config.bucketName,
      accessKeyId: S3_KEY,
      secretAccessKey: S3_KEY,
      region: 'us-east-1',
      ...tuning,
    });

  it('puts a small object with content type and custom metadata, and head reads them back', async () => {
    const bytes = randomBytes(1000);
    const sha = createHash('sha256').update(bytes).digest('hex');
    expect(await store().head('small/one.zip')).toBeNull();
    await store().put('small/one.zip', bytes, { httpMetadata: { contentType: 'application/zip' }, customMetadata: { sha256: sha } });
    const head = await store().head('small/one.zip');
    expect(head).toMatchObject({ size: 1000, customMetadata: { sha256: sha } });
    const got = await s3Get('small/one.zip');
    expect(got.bytes.equals(bytes)).toBe(true);
  });

  it('uploads a stream above the threshold as a multipart upload in equal parts', async () => {
    const bytes = randomBytes(12 * 1024 * 1024 + 123);
    const sha = createHash('sha256').update(bytes).digest('hex');
    const progress: number[] = [];
    const s = new R2S3Store({
      endpoint: s3Endpoint,
      bucket: config.bucketName,
      accessKeyId: S3_KEY,
      secretAccessKey: S3_KEY,
      region: 'us-east-1',
      multipartThreshold: 5 * 1024 * 1024,
      partSize: 5 * 1024 * 1024,
      onProgress: (_key, sent) => progress.push(sent),
    });
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += 700_000) controller.enqueue(bytes.subarray(offset, offset + 700_000));
        controller.close();
      },
    });
    s3Requests.length = 0;
    await s.put('big/archive name+1.zip', stream, { httpMetadata: { contentType: 'application/zip' }, customMetadata: { sha256: sha } });
    expect(progress).toEqual([5 * 1024 * 1024, 10 * 1024 * 1024, bytes.length]);
    const path = `/${config.bucketName}/big/archive%20name%2B1.zip`;
    expect(s3Requests.map((r) => r.replace(/uploadId=[^&]+/, 'uploadId=ID'))).toEqual([
      `POST ${path}?uploads`,
      `PUT ${path}?partNumber=1&uploadId=ID`,
      `PUT ${path}?partNumber=2&uploadId=ID`,
      `PUT ${path}?partNumber=3&uploadId=ID`,
      `POST ${path}?uploadId=ID`,
    ]);
    const got = await s3Get('big/archive name+1.zip');
    expect(got.status).toBe(200);
    expect(createHash('sha256').update(got.bytes).digest('hex')).toBe(sha);
    expect(await s.head('big/archive name+1.zip')).toMatchObject({ size: bytes.length, customMetadata: { sha256: sha } });
  });
});

describe('R2S3Store conditional writes on the wire (leases and records rely on them)', () => {
  // s3rver ignores If-None-Match/If-Match, so what R2 answers is played by a server that records each PUT's
  // condition and answers as R2's and S3's documents say: 409 while a conflicting conditional write is in flight
  // (send it again), then 412 for the loser; 200 with the new ETag for a write whose condition holds.
  it('sends If-None-Match: * / If-Match: "etag", sends a 409 again, and resolves null on 412', async () => {
    const seen: { condition: string; body: string }[] = [];
    const answers = [409, 412, 200];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        seen.push({ condition: `${req.headers['if-none-match'] ?? ''}|${req.headers['if-match'] ?? ''}`, body });
        const status = answers.shift() ?? 500;
        res.writeHead(status, status === 200 ? { etag: '"new-etag"' } : { 'content-type': 'application/xml' });
        res.end(status === 200 ? '' : `<Error><Code>${status === 409 ? 'ConditionalRequestConflict' : 'PreconditionFailed'}</Code></Error>`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const s = new R2S3Store({
        endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        bucket: 'b',
        accessKeyId: S3_KEY,
        secretAccessKey: S3_KEY,
        region: 'us-east-1',
      });
      expect(await s.put('.leases/x', 'owner-a', { onlyIf: { etagDoesNotMatch: '*' } })).toBeNull();
      expect(seen).toEqual([
        { condition: '*|', body: 'owner-a' },
        { condition: '*|', body: 'owner-a' },
      ]);
      expect(await s.put('.leases/x', 'owner-a renewed', { onlyIf: { etagMatches: 'old-etag' } })).toEqual({ key: '.leases/x', etag: 'new-etag' });
      expect(seen[2]).toEqual({ condition: '|"old-etag"', body: 'owner-a renewed' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('lifecycle --remote', () => {
  it('deprecates a module through the KV REST API and the S3 API (the R2 object is the commit point)', async () => {
    // The module, written through the same two APIs by the store's own write path (releases reach a deployed
    // registry only through its publish API; this seeds what the lifecycle command changes).
    const { openRemoteStore } = await import('../../../scripts/lib/stores/remote');
    const { publishModuleVersion } = await import('../../../src/store/modules/write');
    const { fakeDocs } = await import('../../fixtures/modules');
    const bytes = new TextEncoder().encode('a module package: the store never unpacks it\n');
    const address = { hostname: config.hostname, namespace: 'acme', name: 'net', system: 'aws' };
    const seeded = await publishModuleVersion(
      openRemoteStore(config, remoteEnv(), { region: 'us-east-1' }),
      {
        address,
        version: '1.0.0',
        filename: 'net-aws-1.0.0.tar.gz',
        format: 'tar.gz',
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.byteLength,
        publishedAt: new Date(0).toISOString(),
      },
      fakeDocs(),
      { sha256Hex: createHash('sha256').update(bytes).digest('hex'), size: bytes.byteLength, contentType: 'application/gzip', open: () => bytes },
    );
    expect(seeded).toBe('published');
    const result = await runScript(
      'lifecycle',
      ['deprecate', 'acme/net/aws', '--message', 'use acme/network/aws', '--remote', '--env', 'production', '--config', configPath, '--json'],
      remoteEnv(),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ kind: 'module', status: 'changed', lifecycle: { deprecated: { message: 'use acme/network/aws' } } });
    const object = await s3Get(`.lifecycle/modules/${config.hostname}/acme/net/aws.json`);
    expect(object.status).toBe(200);
    expect(JSON.parse(object.bytes.toString('utf8')).deprecated.message).toBe('use acme/network/aws');
    expect(JSON.parse(kvApi.values.get(`${config.kvNamespaceId}/module-lifecycle/${config.hostname}/acme/net/aws`)!).deprecated.message).toBe(
      'use acme/network/aws',
    );
    const refused = await runScript(
      'lifecycle',
      ['withdraw', 'acme/net/aws', '--version', '9.0.0', '--message', 'x', '--remote', '--env', 'production', '--config', configPath],
      remoteEnv(),
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('has no version 9.0.0; published: 1.0.0');
  });
});

describe('publisher --remote', () => {
  it('adds, lists and removes a trusted publisher in R2 through the S3 API (conditional writes), each change audited in R2 through the S3 API as the operator via --remote', async () => {
    const remote = ['--remote', '--env', 'production', '--config', configPath];
    const added = await runScript(
      'publisher',
      [
        'add',
        '--namespace',
        'acme',
        '--issuer',
        'https://token.actions.githubusercontent.com',
        '--repository',
        'acme/terraform-provider-thing',
        '--workflow',
        'release.yml',
        '--ref',
        'refs/tags/v*',
        '--repository-id',
        '1',
        '--owner-id',
        '2',
        '--package',
        'acme/thing',
        '--json',
        ...remote,
      ],
      remoteEnv(),
    );
    expect(added.code, added.stderr).toBe(0);
    const { publisher } = JSON.parse(added.stdout) as { publisher: { id: string; repository: string } };
    expect(publisher.repository).toBe('acme/terraform-provider-thing');
    // Stored where the Worker reads it: the production bucket's publishers object, through the S3 API; nothing in KV.
    const r2 = new R2S3Store({ endpoint: s3Endpoint, bucket: config.bucketName, accessKeyId: S3_KEY, secretAccessKey: S3_KEY, region: 'us-east-1' });
    const stored = async () => JSON.parse(await (await r2.get(publishersObject(config.hostname, 'acme')))!.text()) as unknown[];
    expect(await stored()).toMatchObject([{ id: publisher.id, workflow: 'release.yml', ref: 'refs/tags/v*', packages: ['acme/thing'] }]);
    expect(kvApi.values.has(`${config.kvNamespaceId}/${legacyPublishersKey(config.hostname, 'acme')}`)).toBe(false);
    // Adding it again changes nothing; list reads it back.
    expect(
      (
        await runScript(
          'publisher',
          [
            'add',
            '--namespace',
            'acme',
            '--issuer',
            'https://token.actions.githubusercontent.com',
            '--repository',
            'acme/terraform-provider-thing',
            '--workflow',
            'release.yml',
            '--ref',
            'refs/tags/v*',
            '--repository-id',
            '1',
            '--owner-id',
            '2',
            '--package',
            'acme/thing',
            ...remote,
          ],
          remoteEnv(),
        )
      ).code,
    ).toBe(0);
    const listed = await runScript('publisher', ['list', '--namespace', 'acme', '--json', ...remote], remoteEnv());
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { publishers: { id: string }[] }).publishers.map((p) => p.id)).toEqual([publisher.id]);
    // A bad issuer is refused (exit 1) and writes nothing.
    const refused = await runScript(
      'publisher',
      ['add', '--namespace', 'acme', '--issuer', 'http://ci.example.com', '--repository', 'a/b', ...remote],
      remoteEnv(),
    );
    expect(refused.code).toBe(1);
    expect(await stored()).toHaveLength(1);
    const removed = await runScript('publisher', ['remove', '--namespace', 'acme', publisher.id, ...remote], remoteEnv());
    expect(removed.code, removed.stderr).toBe(0);
    expect(await stored()).toEqual([]);

    // The audit log in R2 (read back through the S3 API): operator via --remote, with the outcomes.
    const entries = (await listAuditEntries({ blobs: r2 }, { namespace: 'acme' })).entries.filter((e) => e.action.startsWith('publisher.'));
    expect(entries.map((e) => [e.action, e.outcome, e.target, e.actor])).toEqual([
      ['publisher.add', 'ok', `${config.hostname}/acme`, { kind: 'operator', via: 'remote' }],
      ['publisher.add', 'unchanged', `${config.hostname}/acme`, { kind: 'operator', via: 'remote' }],
      ['publisher.add', 'refused', `${config.hostname}/acme`, { kind: 'operator', via: 'remote' }],
      ['publisher.remove', 'ok', `${config.hostname}/acme`, { kind: 'operator', via: 'remote' }],
    ]);
  });
});

describe('mirror --remote', () => {
  it('syncs from an upstream and imports a packed directory through the KV REST API and the S3 API; a re-run changes nothing', async () => {
    const { StaticUpstream } = await import('../mirror/upstream');
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const { zipBuffers } = await import('../../../scripts/lib/provider/zip-binary');
    const { inspectArchive } = await import('../../../scripts/lib/provider/archive');
    const { providerAddress, executableName, parsePlatformName } = await import('../../../src/protocol/index');
    const { mirrorIndexKey, mirrorVersionKey, releaseObjectKey } = await import('../../../src/store/layout');
    const ns = config.kvNamespaceId;
    const upstream = await StaticUpstream.start({
      namespace: 'acme',
      type: 'thing',
      releases: [
        { version: '1.0.0', platforms: ['linux_amd64', 'darwin_arm64'] },
        { version: '1.1.0', platforms: ['linux_amd64', 'darwin_arm64'] },
      ],
    });
    try {
      writeFileSync(join(dir, 'mirror-terraformrc'), '');
      const env = { ...remoteEnv(), NODE_EXTRA_CA_CERTS: upstream.caPath, TF_CLI_CONFIG_FILE: join(dir, 'mirror-terraformrc') };
      const mirror = async (args: string[]) => {
        const result = await runScript('mirror', [...args, '--remote', '--env', 'production', '--wrangler-config', configPath, '--json'], env);
        return {
          ...result,
          summary: JSON.parse(result.stdout.trim().split('\n').pop() || 'null') as import('../../../scripts/lib/mirror/summary').MirrorSummary | null,
        };
      };
      const sync = ['sync', `${upstream.host}/acme/thing`, '--version', '~> 1.0', '--platform', 'linux_amd64', '--platform', 'darwin_arm64'];

      const first = await mirror(sync);
      expect(first.code, first.stderr).toBe(0);
      expect(first.summary!.providers[0]!.versions.map((v) => [v.version, v.status])).toEqual([
        ['1.0.0', 'mirrored'],
        ['1.1.0', 'mirrored'],
      ]);
      const address = providerAddress(upstream.host, 'acme', 'thing');
      expect(Object.keys(JSON.parse(kvApi.values.get(`${ns}/${mirrorIndexKey(address)}`)!).versions).sort()).toEqual(['1.0.0', '1.1.0']);
      for (const version of ['1.0.0', '1.1.0']) {
        const document = JSON.parse(kvApi.values.get(`${ns}/${mirrorVersionKey(address, version)}`)!) as {
          archives: Record<string, { url: string; hashes: string[] }>;
        };
        expect(Object.keys(document.archives).sort()).toEqual(['darwin_arm64', 'linux_amd64']);
        for (const platform of first.summary!.providers[0]!.versions.find((v) => v.version === version)!.platforms) {
          // The bytes in R2 are upstream's: their SHA-256 is the zh: hash the mirror's document announces.
          const object = await s3Get(releaseObjectKey(address, version, `terraform-provider-thing_${version}_${platform.platform}.zip`));
          expect(object.status).toBe(200);
          expect(`zh:${createHash('sha256').update(object.bytes).digest('hex')}`).toBe(platform.zh);
          expect(document.archives[platform.platform]!.hashes).toContain(platform.h1);
        }
      }

      const kvPuts = kvApi.requests.filter((r) => r.method === 'PUT').length;
      // Leases and audit entries aside (a re-run records an `unchanged` entry per version), a re-run writes nothing.
      const dataPut = (r: string) => r.startsWith('PUT ') && !r.includes('/.leases/') && !r.includes('/.audit/');
      const auditPuts = () => s3Requests.filter((r) => r.startsWith('PUT ') && r.includes('/.audit/')).length;
      const s3Puts = s3Requests.filter(dataPut).length;
      const auditBefore = auditPuts();
      const archivesBefore = upstream.archiveRequests();
      const again = await mirror(sync);
      expect(again.code, again.stderr).toBe(0);
      expect(again.summary!.providers[0]!.status).toBe('unchanged');
      expect(upstream.archiveRequests()).toBe(archivesBefore);
      expect(kvApi.requests.filter((r) => r.method === 'PUT').length).toBe(kvPuts);
      expect(s3Requests.filter(dataPut).length).toBe(s3Puts);
      expect(auditPuts() - auditBefore).toBe(again.summary!.providers[0]!.versions.length);

      // Import: a packed `terraform providers mirror` directory.
      const source = join(dir, 'mirror-import');
      const providerDir = join(source, 'registry.terraform.io', 'hashicorp', 'null');
      mkdirSync(providerDir, { recursive: true });
      writeFileSync(join(providerDir, 'index.json'), JSON.stringify({ versions: { '3.2.0': {} } }));
      const filename = 'terraform-provider-null_3.2.0_linux_amd64.zip';
      writeFileSync(
        join(providerDir, filename),
        await zipBuffers({ [executableName('null', '3.2.0', parsePlatformName('linux_amd64'))]: '#!/bin/sh\necho null\n' }),
      );
      const digest = await inspectArchive(join(providerDir, filename));
      writeFileSync(
        join(providerDir, '3.2.0.json'),
        JSON.stringify({ archives: { linux_amd64: { url: filename, hashes: [digest.h1, `zh:${digest.sha256Hex}`] } } }),
      );
      const imported = await mirror(['import', source]);
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.summary!.providers.map((p) => [p.address, p.status])).toEqual([['registry.terraform.io/hashicorp/null', 'mirrored']]);
      const nullAddress = providerAddress('registry.terraform.io', 'hashicorp', 'null');
      const stored = await s3Get(releaseObjectKey(nullAddress, '3.2.0', filename));
      expect(createHash('sha256').update(stored.bytes).digest('hex')).toBe(digest.sha256Hex);
      expect(JSON.parse(kvApi.values.get(`${ns}/${mirrorVersionKey(nullAddress, '3.2.0')}`)!).archives.linux_amd64.hashes).toContain(digest.h1);
      const reimported = await mirror(['import', source]);
      expect(reimported.code, reimported.stderr).toBe(0);
      expect(reimported.summary!.providers[0]!.status).toBe('unchanged');

      const listed = await mirror(['list']);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toContain(`${upstream.host}/acme/thing`);
      expect(listed.stdout).toContain('registry.terraform.io/hashicorp/null');
    } finally {
      await upstream.stop();
    }
  }, 400_000); // five CLI runs; each starts tsx, ~20 s on a busy 2-core machine
});
