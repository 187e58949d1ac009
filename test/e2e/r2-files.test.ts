import { build } from '../../bench/build';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { promisify } from 'node:util';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3, type S3Side } from './s3/side';
import { presignedRequestProblem } from './s3/sigv4';
import { compatibilityDate } from '../../scripts/lib/config';
import { tempDir } from '../scripts/helpers';
import { missing, terraform } from '../tools';
import { publishIntoState } from './local-publish';
import { generateRelease, generateSigningKey } from './release';
import { freePort, makeCertificate, type Certificate } from './server';
import { terraformInit } from './terraform-init';

const run = promisify(execFile);

// RELEASE_FILES=r2 with real clients (issue 38): the Worker as built for deploy, in workerd over HTTPS, points
// release files and module packages at presigned URLs of R2's S3 API — played by s3rver behind an HTTPS front
// that checks SigV4 presigned URLs as R2 does (s3rver does not; test/e2e/s3/sigv4.ts, tested below). Real `terraform init` and `terraform
// providers lock` install through it, verifying every hash and the SHA256SUMS signature.

const { dir, cleanup } = tempDir('r2-files');
const PLATFORMS = ['linux_amd64', 'darwin_arm64'];
let mf: Miniflare;
let s3: S3Side;
let certificate: Certificate;
let hostname: string;

describe.skipIf(missing('terraform', terraform))('release files straight from R2, with real terraform', () => {
  beforeAll(async () => {
    const outdir = dirname(await build(dir, null));
    const key = await generateSigningKey();
    const release = await generateRelease(join(dir, 'dist'), 'fromr2', '1.0.0', PLATFORMS, key);
    const port = await freePort();
    hostname = `localhost:${port}`;
    const state = join(dir, 'state');
    await publishIntoState(state, hostname, 'acme', [release], key);
    certificate = makeCertificate(dir);
    s3 = await startS3(dir, certificate);
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
        RELEASE_FILES: 'r2',
        ...s3.bindings,
      },
      kvNamespaces: { REGISTRY_KV: 'edge-registry-local' },
      r2Buckets: { REGISTRY_R2: 'edge-registry' },
      defaultPersistRoot: join(state, 'v3'),
      kvPersist: true,
      r2Persist: true,
      // wrangler.toml binds DOWNLOADS; the counts themselves are tested in the worker project.
      durableObjects: { DOWNLOADS: { className: 'DownloadCounter', useSQLite: true } },
    });
    await mf.ready;
    expect(await s3.copyFrom((await mf.getR2Bucket('REGISTRY_R2')) as unknown as R2Bucket)).toBeGreaterThan(0);
  });

  afterAll(async () => {
    await mf?.dispose();
    await s3?.close();
    cleanup();
  });

  const project = (name: string) => {
    const work = join(dir, name);
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'cli.tfrc'), '');
    writeFileSync(
      join(work, 'main.tf'),
      `terraform {\n  required_providers {\n    fromr2 = { source = "${hostname}/acme/fromr2", version = "1.0.0" }\n  }\n}\n`,
    );
    return work;
  };

  it('terraform init installs the provider from R2; the Worker answers only the metadata', async () => {
    await s3.reset();
    const work = project('init');
    const result = await terraformInit(work, certificate.certPath);
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toMatch(/Installed [^ ]*acme\/fromr2 v1\.0\.0/);
    const fromR2 = await s3.reset();
    // The archive, SHA256SUMS and its signature, each fetched from R2 with its presigned URL.
    expect(fromR2['GET r2 release file']).toBe(3);
    const lock = readFileSync(join(work, '.terraform.lock.hcl'), 'utf8');
    expect(lock).toMatch(/"h1:[A-Za-z0-9+/=]+"/);
    expect(lock).toMatch(/"zh:[0-9a-f]{64}"/);
  });

  it('terraform providers lock fetches every platform from R2 and records its hashes', async () => {
    await s3.reset();
    const work = project('lock');
    const env = {
      PATH: process.env.PATH,
      HOME: work,
      TF_CLI_CONFIG_FILE: join(work, 'cli.tfrc'),
      SSL_CERT_FILE: certificate.certPath,
      CHECKPOINT_DISABLE: '1',
    };
    const { stdout } = await run(terraform!, ['providers', 'lock', '-no-color', ...PLATFORMS.map((p) => `-platform=${p}`)], {
      cwd: work,
      env,
      timeout: 120_000,
    });
    expect(stdout).toContain('Success!');
    const lock = readFileSync(join(work, '.terraform.lock.hcl'), 'utf8');
    expect(lock.match(/"h1:/g)?.length).toBe(PLATFORMS.length);
    expect((await s3.reset())['GET r2 release file']).toBeGreaterThanOrEqual(PLATFORMS.length);
  });

  it('a presigned URL fetches its one object only: another key with the same signature is refused by R2', async () => {
    const response = await mf.dispatchFetch(`https://${hostname}/v1/providers/acme/fromr2/1.0.0/download/linux/amd64`);
    const { download_url } = (await response.json()) as { download_url: string };
    const url = new URL(download_url);
    expect(url.origin).toBe(s3.bindings.R2_ENDPOINT);
    const other = download_url.replace('linux_amd64.zip', 'darwin_arm64.zip');
    const curl = async (target: string) =>
      (await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', certificate.certPath, target], { timeout: 30_000 })).stdout;
    expect(await curl(download_url)).toBe('200');
    expect(await curl(other)).toBe('403');
  });
});

describe('the SigV4 presigned-URL check the S3 stand-in applies', () => {
  // AWS's own example (S3 documentation, "Authenticating Requests: Using Query Parameters"): a valid presigned GET.
  const example =
    '/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
  const secret = (id: string) => (id === 'AKIAIOSFODNN7EXAMPLE' ? 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' : undefined);
  const at = Date.UTC(2013, 4, 24, 1);

  it("accepts AWS's example and refuses it altered, re-targeted, as HEAD, or expired", () => {
    expect(presignedRequestProblem('GET', example, 'examplebucket.s3.amazonaws.com', secret, at)).toBeNull();
    expect(presignedRequestProblem('GET', example.replace('test.txt', 'other.txt'), 'examplebucket.s3.amazonaws.com', secret, at)).toBe(
      'signature does not match',
    );
    expect(presignedRequestProblem('HEAD', example, 'examplebucket.s3.amazonaws.com', secret, at)).toBe('signature does not match');
    expect(presignedRequestProblem('GET', example, 'examplebucket.s3.amazonaws.com', secret, at + 86_400_000)).toBe('expired');
  });
});
