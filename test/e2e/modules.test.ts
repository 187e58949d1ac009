import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../scripts/lib/config';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { writeDemoModule } from '../../scripts/lib/demo/module';
import { publishModule } from '../../scripts/lib/module/publish';
import { signatureQuery } from '../../src/access/signed-urls';
import { get } from './http';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';
import { terraformInit, type InitResult } from './terraform-init';
import { missing, terraform } from '../tools';

/**
 * Modules end to end: versions published with the real publish-module code
 * (one with the CLI itself) into a fresh state, served by `wrangler dev` over
 * HTTPS, then installed by a real `terraform init` — the version constraint
 * resolved by Terraform, the package downloaded and unpacked by go-getter, a
 * submodule address `…//modules/subnet` — publicly and in private mode with
 * a credentials block (refused without one, or out of scope).
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
if (!terraform) console.warn('e2e: skipping the module terraform init tests: no terraform binary in /usr/local/bin or /usr/bin');

const VERSIONS = ['1.0.0', '2.0.0', '2.1.0', '2.2.0-beta.1', '3.0.0'];
const SECRET = 'e2e-modules-signing-secret-0123456789';
let dir: string;
let certificate: Certificate;

/**
 * Terraform requires a module registry hostname with a dot, so the tests use
 * wrangler.toml's REGISTRY_HOSTNAME (registry.example.com) and point it at the
 * local server with the CLI configuration's `host` block (service discovery
 * override) — credentials still belong to registry.example.com.
 */
const HOST = 'registry.example.com';

/** Publishes every version of acme/vpc/aws into `stateDir`; 2.1.0 through the CLI. */
async function publishAll(stateDir: string): Promise<void> {
  const hostname = HOST;
  const config = await readRegistryConfig({ configPath: join(root, 'wrangler.toml'), persistTo: stateDir });
  const store = await openLocalStore(config);
  try {
    for (const version of VERSIONS.filter((v) => v !== '2.1.0')) {
      const tree = join(dir, 'trees', version);
      writeDemoModule(tree, version);
      await publishModule({ path: tree, namespace: 'acme', name: 'vpc', system: 'aws', version, hostname, store, config });
    }
  } finally {
    await store.close();
  }
  const tree = join(dir, 'trees', '2.1.0');
  writeDemoModule(tree, '2.1.0');
  const { stdout } = await run(
    tsx,
    [
      'scripts/publish-module.ts',
      tree,
      '--namespace',
      'acme',
      '--name',
      'vpc',
      '--system',
      'aws',
      '--version',
      '2.1.0',
      '--hostname',
      hostname,
      '--persist-to',
      stateDir,
      '--json',
    ],
    { cwd: root },
  );
  expect(JSON.parse(stdout)).toMatchObject({ status: 'published', submodules: ['modules/subnet'] });
}

/** CLI configuration that sends HOST's modules.v1 to `server`. */
const hostBlock = (server: DevServer) => `host "${HOST}" {\n  services = {\n    "modules.v1" = "${server.origin}/v1/modules/"\n  }\n}\n`;

/** terraform init of a root module calling acme/vpc/aws and its submodule; returns success, output and the installed modules. */
async function init(name: string, hostname: string, cliConfig: string): Promise<InitResult & { work: string }> {
  const work = join(dir, 'terraform', name);
  await mkdir(work, { recursive: true });
  await writeFile(
    join(work, 'main.tf'),
    `module "vpc" {
  source  = "${hostname}/acme/vpc/aws"
  version = "~> 2.0"
  name    = "main"
}

module "subnet" {
  source  = "${hostname}/acme/vpc/aws//modules/subnet"
  version = "~> 2.0"
  name    = "a"
  cidr    = "10.0.1.0/24"
}
`,
  );
  await writeFile(join(work, 'cli.tfrc'), cliConfig);
  return { ...(await terraformInit(work, certificate.certPath, 90_000)), work };
}

const flat = (text: string) => text.replace(/\s+/g, ' ');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-modules-e2e-'));
  certificate = makeCertificate(dir);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('modules over HTTPS (wrangler dev, public)', () => {
  let server: DevServer;
  const hostname = HOST;
  beforeAll(async () => {
    const port = await freePort();
    const stateDir = join(dir, 'public-state');
    await publishAll(stateDir);
    server = await startDevServer({ stateDir, port, certificate });
  }, 240_000);
  afterAll(async () => server?.stop());

  it('discovery, versions and download answer as the protocol says', async () => {
    // identity: wrangler dev's proxy labels the empty 204 body gzip for clients that accept gzip (Terraform copes; the edge does not do this).
    const https = (path: string) => get(`${server.origin}${path}`, { ca: certificate.pem, headers: { 'accept-encoding': 'identity' } });
    expect(JSON.parse((await https('/.well-known/terraform.json')).body.toString())['modules.v1']).toBe('/v1/modules/');
    const versions = JSON.parse((await https('/v1/modules/acme/vpc/aws/versions')).body.toString());
    expect(versions.modules[0].versions.map((v: { version: string }) => v.version)).toEqual(['3.0.0', '2.2.0-beta.1', '2.1.0', '2.0.0', '1.0.0']);
    const download = await https('/v1/modules/acme/vpc/aws/2.1.0/download');
    expect(download.status).toBe(204);
    const archive = await https(String(download.headers['x-terraform-get']));
    expect(archive.status).toBe(200);
    expect(archive.headers['content-type']).toBe('application/gzip');
  });

  it.skipIf(missing('terraform', terraform))(
    'terraform init resolves ~> 2.0 to 2.1.0, downloads and unpacks it, and installs the //modules/subnet submodule',
    async () => {
      const result = await init('public', hostname, hostBlock(server));
      console.log(`--- terraform init, public modules ---\n${result.output}`);
      expect(result.ok).toBe(true);
      const vpc = result.modules.find((m) => m.Key === 'vpc')!;
      const subnet = result.modules.find((m) => m.Key === 'subnet')!;
      expect(vpc).toMatchObject({ Source: `${hostname}/acme/vpc/aws`, Version: '2.1.0' });
      expect(subnet).toMatchObject({ Source: `${hostname}/acme/vpc/aws//modules/subnet`, Version: '2.1.0' });
      expect(readFileSync(join(result.work, vpc.Dir, 'main.tf'), 'utf8')).toContain('value       = "2.1.0"');
      expect(readFileSync(join(result.work, subnet.Dir, 'main.tf'), 'utf8')).toContain('variable "cidr"');
      expect(subnet.Dir.endsWith('modules/subnet')).toBe(true);
    },
  );
});

describe('modules over HTTPS in private mode', () => {
  let server: DevServer;
  const hostname = HOST;
  const tokens = { acme: '', other: '' };
  beforeAll(async () => {
    const port = await freePort();
    const stateDir = join(dir, 'private-state');
    await publishAll(stateDir);
    const token = async (...args: string[]) =>
      (await run(tsx, ['scripts/token.ts', 'create', ...args, '--persist-to', stateDir], { cwd: root })).stdout.trimEnd().split('\n').at(-1)!;
    tokens.acme = await token('--namespace', 'acme', '--name', 'acme');
    tokens.other = await token('--namespace', 'other', '--name', 'other');
    server = await startDevServer({ stateDir, port, certificate, vars: { ACCESS: 'private', URL_SIGNING_SECRET: SECRET } });
  }, 240_000);
  afterAll(async () => server?.stop());

  const credentials = (token: string) => `${hostBlock(server)}credentials "${hostname}" {\n  token = "${token}"\n}\n`;

  it('the download location is signed; an expired or unsigned archive URL gets 403', async () => {
    const https = (path: string, token?: string) =>
      get(`${server.origin}${path}`, {
        ca: certificate.pem,
        headers: { 'accept-encoding': 'identity', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      });
    expect((await https('/v1/modules/acme/vpc/aws/versions')).status).toBe(401);
    expect((await https('/v1/modules/acme/vpc/aws/versions', tokens.other)).status).toBe(403);
    const download = await https('/v1/modules/acme/vpc/aws/2.1.0/download', tokens.acme);
    expect(download.status).toBe(204);
    const location = String(download.headers['x-terraform-get']);
    expect(location).toMatch(/\.tar\.gz\?expires=\d+&signature=/);
    expect((await https(location)).status).toBe(200);
    const path = location.split('?')[0]!;
    expect((await https(path)).status).toBe(403);
    const expired = await https(`${path}?${await signatureQuery({ signingSecret: SECRET }, path, Math.floor(Date.now() / 1000) - 5)}`);
    expect(expired.status).toBe(403);
    expect(expired.body.toString()).toContain('expired');
  });

  it.skipIf(missing('terraform', terraform))(
    'terraform init with a credentials block installs the modules; without one, or out of scope, it is refused',
    async () => {
      const ok = await init('private-ok', hostname, credentials(tokens.acme));
      console.log(`--- terraform init, private modules ---\n${ok.output.replaceAll(/ert_[A-Za-z0-9_-]{43}/g, 'ert_…')}`);
      expect(ok.ok).toBe(true);
      expect(ok.modules.find((m) => m.Key === 'vpc')?.Version).toBe('2.1.0');
      expect(ok.modules.find((m) => m.Key === 'subnet')?.Version).toBe('2.1.0');

      const none = await init('private-none', hostname, hostBlock(server));
      const scope = await init('private-scope', hostname, credentials(tokens.other));
      console.log(`--- terraform init, no token ---\n${none.output}\n--- terraform init, token out of scope ---\n${scope.output}`);
      expect(none.ok).toBe(false);
      expect(scope.ok).toBe(false);
      expect(flat(none.output)).toMatch(/401|requires authentication|Unauthorized/i);
      expect(flat(scope.output)).toMatch(/403|rejected the given authentication credentials|Forbidden/i);
    },
  );
});
