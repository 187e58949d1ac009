import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomFillSync } from 'node:crypto';
import { writeDemoModule } from '../../scripts/lib/demo/module';
import { PART_BYTES } from '../../src/routes/publish/context';
import { zipStored } from '../fixtures/archives';
import { killableEnv, runScript, writeDist, writeKeyFile, type CliResult } from '../scripts/helpers';
import { writeGoreleaserRelease, type GoreleaserRelease } from '../fixtures/goreleaser';
import { expectServedAndInstalled } from './goreleaser-install';
import { get } from './http';
import { terraformInit } from './terraform-init';
import { missing, terraform } from '../tools';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';

/**
 * The publish API end to end, the way a release job uses it: `wrangler dev` over HTTPS with a fresh state, a
 * publish token from `npm run token -- create --publish acme --namespace-wide`, then the real CLI — `publish-provider` and
 * `publish-module` with `--registry URL` and EDGE_REGISTRY_TOKEN, no storage credentials — and the result
 * installed by a real `terraform init` and its signature checked by `gpg --verify`. Also: the CLI's output
 * and exit codes for unchanged, immutable and refused publishes, and a client killed mid-upload.
 */

const HOST = 'registry.example.com';

let dir: string;
let certificate: Certificate;
let server: DevServer;
let state: string;
let publishToken: string;
let readToken: string;
let key: { path: string; keyId: string; publicArmor: string };
let heldToken: string;
let heldKeyId: string;
const SECRET = 'publish-api-e2e-signing-secret-0123456789';
let localRelease: GoreleaserRelease;
let localPublish: CliResult;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-publish-api-'));
  certificate = makeCertificate(dir);
  state = join(dir, 'state');
  const token = async (...args: string[]) => {
    const result = await runScript('token', ['create', ...args, '--persist-to', state]);
    expect(result.code, result.stderr).toBe(0);
    return result.stdout.trimEnd().split('\n').at(-1)!;
  };
  publishToken = await token('--publish', 'acme', '--namespace-wide', '--name', 'release');
  readToken = await token('--namespace', 'acme', '--name', 'reader');
  key = await writeKeyFile(dir, 'signer.asc', 'rsa');
  expect((await runScript('keys', ['import', '--namespace', 'acme', '--key-file', key.path, '--persist-to', state])).code).toBe(0);
  // Namespace "held": keyless, its SHA256SUMS signed by a key the registry holds, of keys generate's default type (RSA-4096).
  const held = await runScript('keys', ['generate', '--namespace', 'held', '--held-by-registry', '--persist-to', state, '--json'], {
    SIGNING_KEY_SECRET: SECRET,
  });
  expect(held.code, held.stderr).toBe(0);
  heldKeyId = (JSON.parse(held.stdout) as { key_id: string }).key_id;
  heldToken = await token('--publish', 'held/thing', '--name', 'keyless');
  // A goreleaser release (the scaffolding config, signed with the publisher's own key) published by the CLI into
  // the local state before the server serves it: the first way in.
  localRelease = await writeGoreleaserRelease(join(dir, 'repo-0.1.0'), 'scaffolding', '0.1.0', { signingKey: readFileSync(key.path, 'utf8') });
  // The server's SIGNING_KEY_SECRET for the in-process registry too (else a developer's .dev.vars would seal the
  // registry's attestation key under another secret than the server's).
  localPublish = await runScript('publish-provider', [localRelease.dist, '--namespace', 'acme', '--persist-to', state, '--json'], {
    EDGE_REGISTRY_SIGNING_KEY: '',
    SIGNING_KEY_SECRET: SECRET,
  });
  server = await startDevServer({ stateDir: state, port: await freePort(), certificate, vars: { SIGNING_KEY_SECRET: SECRET } });
}, 300_000);
afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The CLI against the dev server: only a publish credential and the CA in its environment. */
const cli = (script: string, args: string[], token = publishToken, extra: NodeJS.ProcessEnv = {}) =>
  runScript(script, [...args, '--registry', server.origin], {
    ...extra,
    EDGE_REGISTRY_TOKEN: token,
    NODE_EXTRA_CA_CERTS: certificate.certPath,
    CLOUDFLARE_API_TOKEN: '',
    R2_ACCESS_KEY_ID: '',
    R2_SECRET_ACCESS_KEY: '',
    EDGE_REGISTRY_SIGNING_KEY: '',
  });

/** A root module requiring provider `source` (NAMESPACE/TYPE, on HOST) at `version`, with a CLI configuration pointing HOST at the dev server. */
function providerRoot(name: string, source: string, version: string): string {
  const work = join(dir, name);
  mkdirSync(work, { recursive: true });
  writeFileSync(
    join(work, 'main.tf'),
    `terraform {\n  required_providers {\n    thing = {\n      source  = "${HOST}/${source}"\n      version = "${version}"\n    }\n  }\n}\n`,
  );
  writeFileSync(join(work, 'cli.tfrc'), `host "${HOST}" {\n  services = {\n    "providers.v1" = "${server.origin}/v1/providers/"\n  }\n}\n`);
  return work;
}

const https = (path: string) => get(`${server.origin}${path}`, { ca: certificate.pem, headers: { 'accept-encoding': 'identity' } });

describe('publish-provider --registry', () => {
  it('publishes a signed 3-platform release; a re-run is unchanged; other bytes exit 1 (409); a read token exits 1; --dry-run writes nothing', async () => {
    const dist = await writeDist(join(dir, 'dist-1.0.0'), 'thing', '1.0.0');
    const dry = await cli('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ status: 'dry-run', version: '1.0.0' });
    expect((await https('/v1/providers/acme/thing/versions')).status).toBe(404);

    const published = await cli('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path, '--json']);
    expect(published.code, published.stderr).toBe(0);
    const result = JSON.parse(published.stdout);
    expect(result).toMatchObject({ address: `${HOST}/acme/thing`, version: '1.0.0', status: 'published', key_id: key.keyId, protocols: ['6.0'] });
    expect(result.platforms).toHaveLength(3);
    expect(published.stderr).toMatch(/publishing to https:\/\/localhost:\d+ with EDGE_REGISTRY_TOKEN/);
    expect(published.stdout + published.stderr).not.toContain(publishToken);

    const again = await cli('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).status).toBe('unchanged');

    const rebuilt = await writeDist(join(dir, 'dist-rebuilt'), 'thing', '1.0.0', { salt: 'other bytes' });
    const refused = await cli('publish-provider', [rebuilt, '--namespace', 'acme', '--key-file', key.path]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /error: the registry refused the publish \(409\): registry\.example\.com\/acme\/thing 1\.0\.0 is already published with different contents/,
    );

    const reader = await cli('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path], readToken);
    expect(reader.code).toBe(1);
    expect(reader.stderr).toMatch(/\(403\): this is a read token: it never publishes/);
    const other = await cli('publish-provider', [dist, '--namespace', 'other', '--key-file', key.path]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/\(403\): this publish token may not publish or change other\/thing; it may: NAMESPACE-WIDE acme/);
  });

  it.skipIf(missing('terraform', terraform))(
    'terraform init installs and verifies the release published through the API; gpg --verify accepts its signature',
    async () => {
      const work = providerRoot('tf-provider', 'acme/thing', '1.0.0');
      // The first test saw this provider absent, and the server may reuse that answer for INDEX_CACHE_SECONDS (5 s
      // locally): wait until the list shows the published version, as a client shortly after a publish would.
      for (let waited = 0; waited < 15_000 && (await https('/v1/providers/acme/thing/versions')).status !== 200; waited += 500) {
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const init = await terraformInit(work, certificate.certPath);
      console.log(`--- terraform init of a release published through the API ---\n${init.output}`);
      expect(init.ok, init.output).toBe(true);
      expect(init.output).toContain(`Installed ${HOST}/acme/thing v1.0.0 (self-signed, key ID ${key.keyId})`);
      expect(readFileSync(join(work, '.terraform.lock.hcl'), 'utf8')).toMatch(/h1:[A-Za-z0-9+/]{43}=/);

      const doc = JSON.parse((await https('/v1/providers/acme/thing/1.0.0/download/linux/amd64')).body.toString()) as {
        shasums_url: string;
        shasums_signature_url: string;
      };
      // The release-file URLs are absolute on the origin asked.
      writeFileSync(join(dir, 'SHA256SUMS'), (await https(new URL(doc.shasums_url).pathname)).body);
      writeFileSync(join(dir, 'SHA256SUMS.sig'), (await https(new URL(doc.shasums_signature_url).pathname)).body);
      const home = join(dir, 'gnupg');
      mkdirSync(home, { recursive: true });
      chmodSync(home, 0o700);
      try {
        execFileSync('gpg', ['--batch', '--homedir', home, '--import'], { input: key.publicArmor, stdio: ['pipe', 'pipe', 'pipe'] });
        const verified = spawnSync(
          'gpg',
          ['--batch', '--homedir', home, '--status-fd', '1', '--verify', join(dir, 'SHA256SUMS.sig'), join(dir, 'SHA256SUMS')],
          { encoding: 'utf8' },
        );
        expect(verified.status, verified.stderr).toBe(0);
        expect(verified.stdout).toMatch(/\[GNUPG:\] GOODSIG/);
      } finally {
        spawnSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
      }
    },
  );

  it.skipIf(missing('terraform', terraform))(
    "keyless: the registry signs with its held RSA-4096 key (keys generate's default, signed through WebCrypto) and terraform init verifies the signature",
    async () => {
      const dist = await writeDist(join(dir, 'dist-held'), 'thing', '2.0.0');
      const published = await cli('publish-provider', [dist, '--namespace', 'held', '--json'], heldToken);
      expect(published.code, published.stderr).toBe(0);
      expect(JSON.parse(published.stdout)).toMatchObject({ address: `${HOST}/held/thing`, version: '2.0.0', status: 'published', key_id: heldKeyId });
      const work = providerRoot('tf-held', 'held/thing', '2.0.0');
      const init = await terraformInit(work, certificate.certPath);
      expect(init.ok, init.output).toBe(true);
      expect(init.output).toContain(`Installed ${HOST}/held/thing v2.0.0 (self-signed, key ID ${heldKeyId})`);
    },
  );

  it('an archive above the single-PUT part size goes up in parts (an R2 multipart upload) and is served back byte for byte', async () => {
    // A stored (uncompressed) executable of PART_BYTES + 1 MiB of random bytes: a zip just over one part.
    const executable = randomFillSync(Buffer.alloc(PART_BYTES + (1 << 20)));
    const zip = zipStored({ 'terraform-provider-big_v1.0.0': executable });
    expect(zip.byteLength).toBeGreaterThan(PART_BYTES);
    const dist = join(dir, 'dist-big');
    mkdirSync(dist, { recursive: true });
    writeFileSync(join(dist, 'terraform-provider-big_1.0.0_linux_amd64.zip'), zip);
    const published = await cli('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path, '--json']);
    expect(published.code, published.stderr).toBe(0);
    expect(JSON.parse(published.stdout)).toMatchObject({ status: 'published', platforms: [{ os: 'linux', arch: 'amd64', size: zip.byteLength }] });
    expect(published.stderr).toMatch(/terraform-provider-big_1\.0\.0_linux_amd64\.zip \(\d+\.\d+ MB in 2 parts\)/);
    // Local only: after a request body of a 16+ MiB part went to an R2 multipart upload, workerd closes that
    // connection, and wrangler dev's proxy may hold the next request on it until it times out (seen here: a GET
    // hung 180 s, the one after answered at once; a 60 MiB single PUT does not do it). Cloudflare's edge
    // terminates clients' connections itself. So the first request after gets a short timeout and one retry.
    const afterParts = async (path: string) => {
      const url = new URL(path, server.origin).href;
      const options = { ca: certificate.pem, headers: { 'accept-encoding': 'identity' }, timeoutMs: 20_000 };
      return get(url, options).catch((error: Error) => {
        console.log(`first request after the multipart upload: ${error.message}; retrying once`);
        return get(url, options);
      });
    };
    const doc = JSON.parse((await afterParts('/v1/providers/acme/big/1.0.0/download/linux/amd64')).body.toString()) as { download_url: string; shasum: string };
    const sha256 = createHash('sha256').update(zip).digest('hex');
    expect(doc.shasum).toBe(sha256);
    const served = await afterParts(new URL(doc.download_url, `${server.origin}/v1/providers/acme/big/1.0.0/download/linux/amd64`).pathname);
    expect(served.status).toBe(200);
    expect(served.body.byteLength).toBe(zip.byteLength);
    expect(createHash('sha256').update(served.body).digest('hex')).toBe(sha256);
  });

  it("--docs goes with the release through the API: the version's docs pages show it", async () => {
    const dist = await writeDist(join(dir, 'dist-documented'), 'documented', '1.0.0');
    const spec = join(dir, 'documented-spec.json');
    writeFileSync(
      spec,
      JSON.stringify({
        version: '0.1',
        provider: { name: 'documented', description: 'Documented things.' },
        resources: [{ name: 'thing', schema: { attributes: [{ name: 'id', string: { computed_optional_required: 'computed' } }] } }],
      }),
    );
    const published = await cli('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path, '--docs', spec, '--json']);
    expect(published.code, published.stderr).toBe(0);
    expect(JSON.parse(published.stdout)).toMatchObject({ status: 'published' });
    const page = await https('/providers/acme/documented/1.0.0/docs/resources/documented_thing');
    expect(page.status).toBe(200);
    expect(page.body.toString()).toContain('documented_thing');
  });

  it('a client killed mid-upload leaves nothing listed; running it again publishes the version', async () => {
    const dist = await writeDist(join(dir, 'dist-killed'), 'killed', '1.0.0');
    // The CLI's own test hook: SIGKILL as the second file is about to go — one file staged, nothing committed.
    const killed = await cli('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path], publishToken, {
      EDGE_REGISTRY_TEST_KILL_AT: 'upload#2',
      ...killableEnv(dir),
    });
    expect(killed.code).not.toBe(0);
    const stderr = killed.stderr;
    expect(stderr.match(/ {2}uploading /g)).toHaveLength(1);
    expect(stderr).not.toMatch(/committing/);
    expect((await https('/v1/providers/acme/killed/versions')).status).toBe(404);
    expect((await https('/v1/providers/acme/killed/1.0.0/download/linux/amd64')).status).toBe(404);

    const again = await cli('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).status).toBe('published');
    // The server may reuse its "not found" answers for INDEX_CACHE_SECONDS (5 s locally).
    await new Promise((resolve) => setTimeout(resolve, 6000));
    const listed = JSON.parse((await https('/v1/providers/acme/killed/1.0.0/download/linux/amd64')).body.toString()) as { shasum: string };
    expect(listed.shasum).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("a goreleaser release (terraform-provider-scaffolding-framework's .goreleaser.yml): dist/ as goreleaser leaves it, the manifest in the repository root", () => {
  it.skipIf(missing('terraform', terraform))(
    "published by the CLI into the local state: 13 platforms, protocols 6.0 from the root manifest, the publisher's SHA256SUMS and signature served byte for byte; terraform init installs it",
    async () => {
      expect(localPublish.code, localPublish.stderr).toBe(0);
      expect(JSON.parse(localPublish.stdout)).toMatchObject({ status: 'published', protocols: ['6.0'], key_id: key.keyId });
      expect(localPublish.stderr).toMatch(/protocols \["6\.0"\] from \S*repo-0\.1\.0\/terraform-registry-manifest\.json/);
      expect(localPublish.stderr).toMatch(/signature verified with key [0-9A-F]{16}; publishing it as is/);
      // A brand-new provider's first publish says what it wrote, and nothing reads as damage.
      expect(localPublish.stderr).not.toMatch(/REPAIR|rebuilding the index/);
      expect(localPublish.stderr).toMatch(
        /documents: the version lists \(registry, mirror\) and the provider page of registry\.example\.com\/acme\/scaffolding/,
      );
      const output = await expectServedAndInstalled({
        origin: server.origin,
        certificate,
        host: HOST,
        namespace: 'acme',
        release: localRelease,
        keyId: key.keyId,
        publisherKey: key.publicArmor,
        work: join(dir, 'tf-goreleaser-local'),
      });
      console.log(`--- terraform init of a goreleaser release published by the CLI into local state ---\n${output}`);
    },
  );

  it.skipIf(missing('terraform', terraform))(
    '--registry with a publish token: the manifest goes along, its SHA256SUMS line checked by the server; protocols 6.0; terraform init installs it',
    async () => {
      const release = await writeGoreleaserRelease(join(dir, 'repo-0.2.0'), 'scaffolding', '0.2.0', { signingKey: readFileSync(key.path, 'utf8') });
      const dry = await cli('publish-provider', [release.dist, '--namespace', 'acme', '--dry-run', '--json']);
      expect(dry.code, dry.stderr).toBe(0);
      expect(JSON.parse(dry.stdout)).toMatchObject({ status: 'dry-run', protocols: ['6.0'] });
      const published = await cli('publish-provider', [release.dist, '--namespace', 'acme', '--json']);
      expect(published.code, published.stderr).toBe(0);
      expect(JSON.parse(published.stdout)).toMatchObject({ status: 'published', protocols: ['6.0'], key_id: key.keyId });
      expect(JSON.parse(published.stdout).platforms).toHaveLength(13);
      await expectServedAndInstalled({
        origin: server.origin,
        certificate,
        host: HOST,
        namespace: 'acme',
        release,
        keyId: key.keyId,
        publisherKey: key.publicArmor,
        work: join(dir, 'tf-goreleaser-api'),
      });
      const again = await cli('publish-provider', [release.dist, '--namespace', 'acme', '--json']);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout).status).toBe('unchanged');
    },
  );

  it('a manifest that changed after the build is refused by the CLI before anything is sent (nothing published)', async () => {
    const release = await writeGoreleaserRelease(join(dir, 'repo-0.3.0'), 'scaffolding', '0.3.0', { signingKey: readFileSync(key.path, 'utf8') });
    writeFileSync(release.manifestPath, JSON.stringify({ version: 1, metadata: { protocol_versions: ['5.0'] } }));
    const refused = await cli('publish-provider', [release.dist, '--namespace', 'acme']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /_SHA256SUMS: terraform-provider-scaffolding_0\.3\.0_manifest\.json is listed with SHA-256 [0-9a-f]{64} but \S*terraform-registry-manifest\.json has [0-9a-f]{64}; the manifest changed after the release was built/,
    );
    expect((await https('/v1/providers/acme/scaffolding/0.3.0/download/linux/amd64')).status).toBe(404);
  });
});

describe('publish-module --registry', () => {
  it.skipIf(missing('terraform', terraform))('publishes a module directory that terraform init then installs', async () => {
    const tree = join(dir, 'module-tree');
    writeDemoModule(tree, '1.0.0');
    const published = await cli('publish-module', [
      tree,
      '--namespace',
      'acme',
      '--name',
      'vpc',
      '--system',
      'aws',
      '--version',
      '1.0.0',
      '--hostname',
      HOST,
      '--json',
    ]);
    expect(published.code, published.stderr).toBe(0);
    expect(JSON.parse(published.stdout)).toMatchObject({ status: 'published', version: '1.0.0', format: 'tar.gz' });

    const work = join(dir, 'tf-module');
    mkdirSync(work, { recursive: true });
    writeFileSync(join(work, 'main.tf'), `module "vpc" {\n  source  = "${HOST}/acme/vpc/aws"\n  version = "1.0.0"\n  name    = "main"\n}\n`);
    writeFileSync(join(work, 'cli.tfrc'), `host "${HOST}" {\n  services = {\n    "modules.v1" = "${server.origin}/v1/modules/"\n  }\n}\n`);
    const init = await terraformInit(work, certificate.certPath);
    console.log(`--- terraform init of a module published through the API ---\n${init.output}`);
    expect(init.ok, init.output).toBe(true);
    const vpc = init.modules.find((m) => m.Key === 'vpc')!;
    expect(vpc.Version).toBe('1.0.0');
    expect(readFileSync(join(work, vpc.Dir, 'main.tf'), 'utf8')).toContain('1.0.0');
  });
});
