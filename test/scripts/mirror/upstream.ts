import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { createServer as createPlainServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as openpgp from 'openpgp';
import { executableName, formatShasums, parsePlatformName } from '../../../src/protocol/index';
import { zipBuffers } from '../../../scripts/lib/provider/zip-binary';

/**
 * A second, independent provider registry for the mirror tests: static
 * files generated here, served with node:https under a CA made for it
 * (openssl), SHA256SUMS signed by a GnuPG-made RSA key (gpg --detach-sign).
 * Each release can carry one defect, so a single upstream exercises every
 * hostile case next to good versions. Every request is recorded.
 */

export type Defect =
  | 'wrong-shasum'
  | 'missing-sums-line'
  | 'bad-signature'
  | 'foreign-key'
  | 'no-executable'
  | 'flaky-500'
  | 'hang'
  | 'redirect-loop'
  | 'huge-json'
  | 'malformed-json'
  // archive bytes other than the signed SHA256SUMS line (and the document's shasum) say
  | 'tampered-archive'
  // the archive's response stalls half-way
  | 'hang-archive'
  // every archive request answers 500
  | 'archive-500';

export interface ReleaseSpec {
  version: string;
  platforms: string[];
  defect?: Defect;
  /** Changes every byte of the release ("upstream rebuilt it"). */
  salt?: string;
  /** Archives sent without Content-Length (chunked). */
  chunked?: boolean;
  /** Incompressible filler bytes in each executable (large archives). */
  padding?: number;
}

export interface UpstreamOptions {
  namespace: string;
  type: string;
  releases: ReleaseSpec[];
  /** providers.v1 as an absolute URL (default: path-relative "/v1/providers/"). */
  absoluteDiscovery?: boolean;
  /** Bearer token every registry API request must carry (401 otherwise). */
  requireToken?: string;
  /** Plain HTTP on 127.0.0.1 instead of HTTPS (what a Worker under wrangler dev can reach: workerd trusts only public CAs). */
  plainHttp?: boolean;
}

interface GpgKey {
  home: string;
  fingerprint: string;
  keyId: string;
  publicArmor: string;
}

let gpgKey: Promise<GpgKey> | undefined;
let foreignKey: Promise<openpgp.PrivateKey> | undefined;

/**
 * One GnuPG RSA-2048 key per test file, in its own GNUPGHOME; a file that
 * uses it calls releaseUpstreamGpgKey in afterAll (the run fails on a
 * leftover home: test/fixtures/leaks.setup.ts).
 */
export function upstreamGpgKey(): Promise<GpgKey> {
  gpgKey ??= (async () => {
    const home = mkdtempSync(join(tmpdir(), 'edge-registry-upstream-gpg-'));
    const gpg = (...args: string[]) =>
      execFileSync('gpg', ['--homedir', home, '--batch', '--pinentry-mode', 'loopback', '--passphrase', '', ...args], { stdio: 'pipe' });
    gpg('--quick-gen-key', 'upstream test <upstream@example.com>', 'rsa2048', 'sign', 'never');
    const colons = gpg('--with-colons', '--list-secret-keys').toString();
    const fingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(colons)![1]!;
    return { home, fingerprint, keyId: fingerprint.slice(-16), publicArmor: gpg('--armor', '--export', fingerprint).toString() };
  })();
  return gpgKey;
}

/** Stops the key's agent and removes its GNUPGHOME (afterAll of a file that used upstreamGpgKey or StaticUpstream). */
export async function releaseUpstreamGpgKey(): Promise<void> {
  const pending = gpgKey;
  gpgKey = undefined;
  if (!pending) return;
  const { home } = await pending;
  stopAgent(home);
  rmSync(home, { recursive: true, force: true });
}

function gpgSign(key: GpgKey, data: Uint8Array): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'edge-registry-sign-'));
  try {
    writeFileSync(join(dir, 'sums'), data);
    execFileSync(
      'gpg',
      [
        '--homedir',
        key.home,
        '--batch',
        '--pinentry-mode',
        'loopback',
        '--passphrase',
        '',
        '--local-user',
        key.fingerprint,
        '--detach-sign',
        '--output',
        join(dir, 'sums.sig'),
        join(dir, 'sums'),
      ],
      { stdio: 'pipe' },
    );
    return readFileSync(join(dir, 'sums.sig'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Stops the gpg-agent that gpg started for `home` (key generation and
 * signing need one; it would outlive the test and its removed home) and
 * waits until it is gone: its socket removed, at most 5 s. Called once, when
 * the key is released — never between gpg calls: `gpgconf --kill` returns
 * before the agent has exited, and a gpg run in that window failed now and
 * then with "can't connect to the agent".
 */
function stopAgent(home: string): void {
  const socket = spawnSync('gpgconf', ['--homedir', home, '--list-dirs', 'agent-socket'], { encoding: 'utf8' }).stdout.trim();
  spawnSync('gpgconf', ['--homedir', home, '--kill', 'gpg-agent'], { stdio: 'ignore' });
  const until = Date.now() + 5000;
  while (socket && existsSync(socket) && Date.now() < until) spawnSync('sleep', ['0.05']);
}

async function foreignSign(data: Uint8Array): Promise<Uint8Array> {
  foreignKey ??= openpgp
    .generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'someone else' }], format: 'object' })
    .then((k) => k.privateKey);
  const message = await openpgp.createMessage({ binary: data });
  return openpgp.sign({ message, signingKeys: await foreignKey, detached: true, format: 'binary' }) as Promise<Uint8Array>;
}

/** A CA and a localhost certificate it signed (Go and Node both need a real chain and subjectAltName). */
export function makeCa(dir: string): { caPath: string; certPath: string; keyPath: string } {
  const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'pipe', cwd: dir });
  run([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=edge-registry upstream test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=localhost']);
  writeFileSync(join(dir, 'leaf.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  run(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '2', '-extfile', 'leaf.ext']);
  return { caPath: join(dir, 'ca.pem'), certPath: join(dir, 'leaf.pem'), keyPath: join(dir, 'leaf.key') };
}

type Route = (req: IncomingMessage, res: ServerResponse) => void;

export class StaticUpstream {
  /** Paths requested, in order. */
  readonly requests: string[] = [];
  /** Called before routing; return true when it answered (tests' own hostility). */
  onRequest: ((req: IncomingMessage, res: ServerResponse) => boolean) | null = null;
  private routes = new Map<string, Route>();
  private hanging = new Set<ServerResponse>();
  private flaky = new Map<string, number>();

  private constructor(
    readonly dir: string,
    readonly caPath: string,
    private readonly server: Server,
    readonly port: number,
    private options: UpstreamOptions,
  ) {}

  /** localhost:PORT — the hostname in provider addresses. */
  get host(): string {
    return `localhost:${this.port}`;
  }

  get origin(): string {
    return this.options.plainHttp ? `http://127.0.0.1:${this.port}` : `https://${this.host}`;
  }

  /** Requests for one archive file name (any version's path ending in it). */
  archiveRequestsFor(filename: string): number {
    return this.requests.filter((p) => p === `/files/${filename}`).length;
  }

  /** Requests for archives (`/files/…zip`), the thing a re-run must not repeat. */
  archiveRequests(): number {
    return this.requests.filter((p) => p.startsWith('/files/') && p.endsWith('.zip')).length;
  }

  static async start(options: UpstreamOptions): Promise<StaticUpstream> {
    const dir = mkdtempSync(join(tmpdir(), 'edge-registry-upstream-'));
    const tls = makeCa(dir);
    let self: StaticUpstream | undefined;
    const server = options.plainHttp
      ? (createPlainServer((req, res) => self!.handle(req, res)) as unknown as Server)
      : createServer({ cert: readFileSync(tls.certPath), key: readFileSync(tls.keyPath) }, (req, res) => self!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    self = new StaticUpstream(dir, tls.caPath, server, port, options);
    await self.setReleases(options.releases);
    return self;
  }

  /** Regenerates every file from `releases` (a new version appears, bytes change…). */
  async setReleases(releases: ReleaseSpec[]): Promise<void> {
    this.options = { ...this.options, releases };
    const { namespace, type } = this.options;
    const key = await upstreamGpgKey();
    const routes = new Map<string, Route>();
    const json =
      (body: unknown): Route =>
      (_req, res) =>
        send(res, 200, JSON.stringify(body), 'application/json');
    const bytes =
      (data: Uint8Array, contentType: string): Route =>
      (_req, res) =>
        send(res, 200, data, contentType);
    const base = this.options.absoluteDiscovery ? `${this.origin}/v1/providers/` : '/v1/providers/';
    routes.set('/.well-known/terraform.json', json({ 'providers.v1': base, 'modules.v1': '/v1/modules/' }));
    routes.set(
      `/v1/providers/${namespace}/${type}/versions`,
      json({
        versions: releases.map((r) => ({
          version: r.version,
          protocols: ['5.0'],
          platforms: r.platforms.map((p) => ({ os: parsePlatformName(p).os, arch: parsePlatformName(p).arch })),
        })),
      }),
    );
    for (const release of releases) {
      const { version, defect } = release;
      const zips = new Map<string, Buffer>();
      for (const platform of release.platforms) {
        const p = parsePlatformName(platform);
        const executable = Buffer.concat([
          Buffer.from(`#!/bin/sh\necho "upstream ${type} ${version} ${platform} ${release.salt ?? ''}"\nexit 1\n`),
          release.padding ? randomBytes(release.padding) : Buffer.alloc(0),
        ]);
        const files: Record<string, Uint8Array | string> =
          defect === 'no-executable'
            ? { 'README.md': `no provider here ${version}\n` }
            : { [executableName(type, version, p)]: executable, LICENSE: `license ${version}\n` };
        zips.set(platform, await zipBuffers(files, { compress: !release.padding }));
      }
      const filename = (platform: string) => `terraform-provider-${type}_${version}_${platform}.zip`;
      const sha = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
      const lines = [...zips]
        .filter(([platform]) => !(defect === 'missing-sums-line' && platform === release.platforms[0]))
        .map(([platform, zip]) => ({ filename: filename(platform), sha256Hex: sha(zip) }));
      const sums = Buffer.from(formatShasums(lines));
      const signature =
        defect === 'foreign-key'
          ? await foreignSign(sums)
          : defect === 'bad-signature'
            ? gpgSign(key, Buffer.concat([sums, Buffer.from('tampered\n')]))
            : gpgSign(key, sums);
      const sumsName = `terraform-provider-${type}_${version}_SHA256SUMS`;
      routes.set(`/files/${sumsName}`, bytes(sums, 'text/plain'));
      routes.set(`/files/${sumsName}.sig`, bytes(signature, 'application/octet-stream'));
      for (const [platform, zip] of zips) {
        const p = parsePlatformName(platform);
        const archivePath = `/files/${filename(platform)}`;
        const docPath = `/v1/providers/${namespace}/${type}/${version}/download/${p.os}/${p.arch}`;
        routes.set(archivePath, bytes(zip, 'application/zip'));
        if (defect === 'tampered-archive') {
          const other = Buffer.from(zip);
          other[other.length >> 1]! ^= 0xff;
          routes.set(archivePath, bytes(other, 'application/zip'));
        }
        if (release.chunked) {
          // No Content-Length: the body is sent chunked, in two writes.
          const served = defect === 'tampered-archive' ? Buffer.from(zip).map((b, i) => (i === zip.length >> 1 ? b ^ 0xff : b)) : zip;
          routes.set(archivePath, (_req, res) => {
            res.writeHead(200, { 'content-type': 'application/zip' });
            res.write(served.subarray(0, served.byteLength >> 1));
            res.end(served.subarray(served.byteLength >> 1));
          });
        }
        if (defect === 'hang-archive') {
          routes.set(archivePath, (_req, res) => {
            res.writeHead(200, { 'content-type': 'application/zip', 'content-length': zip.byteLength });
            res.write(zip.subarray(0, zip.byteLength >> 1));
            this.hanging.add(res);
          });
        }
        if (defect === 'archive-500') routes.set(archivePath, (_req, res) => send(res, 500, 'upstream broke', 'text/plain'));
        routes.set(
          docPath,
          json({
            protocols: ['5.0'],
            os: p.os,
            arch: p.arch,
            filename: filename(platform),
            download_url: defect === 'redirect-loop' ? '/files/loop-a' : archivePath,
            shasums_url: `/files/${sumsName}`,
            shasums_signature_url: `/files/${sumsName}.sig`,
            shasum: defect === 'wrong-shasum' ? sha(Buffer.from('something else')) : sha(zip),
            signing_keys: { gpg_public_keys: [{ key_id: key.keyId, ascii_armor: key.publicArmor, trust_signature: '', source: 'upstream', source_url: null }] },
          }),
        );
        if (defect === 'flaky-500') this.flaky.set(archivePath, 2);
        if (defect === 'hang')
          routes.set(docPath, (_req, res) => {
            this.hanging.add(res);
          });
        if (defect === 'huge-json') routes.set(docPath, (_req, res) => send(res, 200, `{"padding":"${'x'.repeat(20 * 1024 * 1024)}"}`, 'application/json'));
        if (defect === 'malformed-json') routes.set(docPath, (_req, res) => send(res, 200, '{"protocols": ["5.0"], "os": ', 'application/json'));
      }
    }
    routes.set('/files/loop-a', (_req, res) => {
      res.writeHead(302, { location: '/files/loop-b' }).end();
    });
    routes.set('/files/loop-b', (_req, res) => {
      res.writeHead(302, { location: '/files/loop-a' }).end();
    });
    this.routes = routes;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? '/', 'https://x').pathname;
    this.requests.push(path);
    if (this.onRequest?.(req, res)) return;
    if (this.options.requireToken && path.startsWith('/v1/') && req.headers.authorization !== `Bearer ${this.options.requireToken}`) {
      send(res, 401, '{"errors":["unauthorized"]}', 'application/json');
      return;
    }
    const left = this.flaky.get(path);
    if (left) {
      this.flaky.set(path, left - 1);
      res.writeHead(503, { 'retry-after': '1', 'content-type': 'text/plain' }).end('try again');
      return;
    }
    const route = this.routes.get(path);
    if (!route) {
      send(res, 404, '{"errors":["not found"]}', 'application/json');
      return;
    }
    route(req, res);
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function send(res: ServerResponse, status: number, body: string | Uint8Array, contentType: string): void {
  const data = typeof body === 'string' ? Buffer.from(body) : body;
  res.writeHead(status, { 'content-type': contentType, 'content-length': data.byteLength });
  res.end(data);
}
