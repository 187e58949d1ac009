import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProviderPackageResponse } from '../../src/protocol/providers-v1';
import { get } from './http';
import { publishIntoState } from './local-publish';
import { generateRelease, generateSigningKey } from './release';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';
import { missing, terraform } from '../tools';

/**
 * Private mode as a user runs it: `wrangler dev --var ACCESS:private` over
 * HTTPS on a fresh state, tokens made with `npm run token` (the real CLI) in
 * that state, then plain HTTPS requests and — where terraform is installed —
 * real `terraform init` with a credentials block, as origin registry and
 * through network_mirror, including the errors users see for 401 and 403.
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
if (!terraform) console.warn('e2e: skipping the private-mode terraform init tests: no terraform binary in /usr/local/bin or /usr/bin');

const MIRRORED = 'registry.example.com';
const localPlatform = `${process.platform}_${process.arch === 'x64' ? 'amd64' : process.arch}`;

let dir: string;
let stateDir: string;
let server: DevServer;
let certificate: Certificate;
let hostname: string;
const tokens: Record<'origin' | 'mirror' | 'wrongScope' | 'revoked', string> = { origin: '', mirror: '', wrongScope: '', revoked: '' };

async function tokenCli(...args: string[]): Promise<string> {
  const { stdout } = await run(tsx, ['scripts/token.ts', ...args, '--persist-to', stateDir], { cwd: root });
  return stdout.trimEnd().split('\n').at(-1)!;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-private-'));
  stateDir = join(dir, 'state');
  const key = await generateSigningKey();
  const release = await generateRelease(join(dir, 'dist'), 'thing', '1.3.0', [...new Set([localPlatform, 'linux_amd64', 'darwin_arm64'])], key);
  const port = await freePort();
  hostname = `localhost:${port}`;
  for (const host of [hostname, MIRRORED]) await publishIntoState(stateDir, host, 'acme', [release], key);
  tokens.origin = await tokenCli('create', '--namespace', 'acme', '--name', 'origin');
  tokens.mirror = await tokenCli('create', '--namespace', `${MIRRORED}/acme`, '--name', 'mirror');
  tokens.wrongScope = await tokenCli('create', '--namespace', 'other', '--name', 'other');
  tokens.revoked = await tokenCli('create', '--namespace', '*', '--name', 'revoked');
  await tokenCli('revoke', 'revoked');
  certificate = makeCertificate(dir);
  server = await startDevServer({
    stateDir,
    port,
    certificate,
    vars: { REGISTRY_HOSTNAME: hostname, ACCESS: 'private', URL_SIGNING_SECRET: 'e2e-private-mode-signing-secret-0123456789' },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('private mode over HTTPS (wrangler dev)', () => {
  const https = (path: string, token?: string) =>
    get(`${server.origin}${path}`, { ca: certificate.pem, ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}) });

  it('discovery is public; metadata needs a token; downloads need the signed URL only', async () => {
    expect((await https('/.well-known/terraform.json')).status).toBe(200);
    const denied = await https('/v1/providers/acme/thing/versions');
    expect(denied.status).toBe(401);
    expect(denied.headers['www-authenticate']).toMatch(/^Bearer/);
    expect((await https('/v1/providers/acme/thing/versions', tokens.revoked)).status).toBe(401);
    expect((await https('/v1/providers/acme/thing/versions', tokens.wrongScope)).status).toBe(403);

    const path = `/v1/providers/acme/thing/1.3.0/download/linux/amd64`;
    const download = await https(path, tokens.origin);
    expect(download.status).toBe(200);
    expect(download.headers['cache-control']).toBe('private, no-store');
    const doc = parseProviderPackageResponse(JSON.parse(download.body.toString('utf8')));
    expect(doc.download_url).toContain('?expires=');
    expect(doc.download_url.startsWith(`${server.origin}/v1/archives/`)).toBe(true); // absolute on the origin asked
    const signedPath = doc.download_url.slice(server.origin.length);
    const archive = await https(signedPath);
    expect(archive.status).toBe(200);
    expect(String(archive.headers['cache-control'])).toMatch(/^private, max-age=\d+$/);
    expect((await https(signedPath.split('?')[0]!)).status).toBe(403);
  });
});

describe.skipIf(missing('terraform', terraform))('terraform init against a private registry', () => {
  /** terraform init in a fresh directory; returns whether it succeeded and everything it printed. */
  async function init(name: string, source: string, cliConfig: string): Promise<{ ok: boolean; output: string }> {
    const work = join(dir, 'terraform', name);
    await mkdir(work, { recursive: true });
    await writeFile(
      join(work, 'main.tf'),
      `terraform {\n  required_providers {\n    thing = {\n      source  = "${source}"\n      version = "1.3.0"\n    }\n  }\n}\n`,
    );
    await writeFile(join(work, 'cli.tfrc'), cliConfig);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: work,
      TF_CLI_CONFIG_FILE: join(work, 'cli.tfrc'),
      SSL_CERT_FILE: certificate.certPath,
      CHECKPOINT_DISABLE: '1',
      TF_IN_AUTOMATION: '1',
    };
    try {
      const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color'], { cwd: work, env, timeout: 90_000 });
      return { ok: true, output: stdout + stderr };
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      return { ok: false, output: `${stdout ?? ''}${stderr ?? ''}` };
    }
  }

  const credentials = (token: string) => `credentials "${hostname}" {\n  token = "${token}"\n}\n`;
  const mirrorBlock = () => `provider_installation {\n  network_mirror {\n    url = "${server.origin}/v1/mirror/"\n  }\n}\n`;
  const flat = (text: string) => text.replace(/\s+/g, ' ');
  const show = (what: string, output: string) => console.log(`--- terraform init, ${what} ---\n${output.replaceAll(/ert_[A-Za-z0-9_-]{43}/g, 'ert_…')}`);

  it('installs from the origin registry with a token (signed download, SHA256SUMS and signature URLs)', async () => {
    const result = await init('origin-ok', `${hostname}/acme/thing`, credentials(tokens.origin));
    show('origin registry, token in scope', result.output);
    expect(result.ok).toBe(true);
    expect(result.output).toContain(`Installed ${hostname}/acme/thing v1.3.0`);
  });

  it('installs through network_mirror with a token scoped to the mirrored namespace', async () => {
    const result = await init('mirror-ok', `${MIRRORED}/acme/thing`, mirrorBlock() + credentials(tokens.mirror));
    show('network mirror, token in scope', result.output);
    expect(result.ok).toBe(true);
    expect(result.output).toContain(`Installed ${MIRRORED}/acme/thing v1.3.0`);
  });

  it('fails without a token, with a revoked token and with a token out of scope (origin registry)', async () => {
    const none = await init('origin-none', `${hostname}/acme/thing`, '');
    show('origin registry, no token (401)', none.output);
    const revoked = await init('origin-revoked', `${hostname}/acme/thing`, credentials(tokens.revoked));
    show('origin registry, revoked token (401)', revoked.output);
    const scope = await init('origin-scope', `${hostname}/acme/thing`, credentials(tokens.wrongScope));
    show('origin registry, token out of scope (403)', scope.output);
    for (const result of [none, revoked, scope]) expect(result.ok).toBe(false);
    // Terraform 1.11 shows its own text for 401 and 403, not the JSON error (whitespace: it wraps lines).
    expect(flat(none.output)).toContain(`host ${hostname} requires authentication credentials`);
    expect(flat(revoked.output)).toContain(`host ${hostname} rejected the given authentication credentials`);
    expect(flat(scope.output)).toContain(`host ${hostname} rejected the given authentication credentials`);
  });

  it('fails without a token and with a token out of scope (network mirror)', async () => {
    const none = await init('mirror-none', `${MIRRORED}/acme/thing`, mirrorBlock());
    show('network mirror, no token (401)', none.output);
    const scope = await init('mirror-scope', `${MIRRORED}/acme/thing`, mirrorBlock() + credentials(tokens.origin));
    show('network mirror, token out of scope (403)', scope.output);
    for (const result of [none, scope]) {
      expect(result.ok).toBe(false);
      expect(flat(result.output)).toContain(`host ${hostname} rejected the given authentication credentials`);
    }
  });
});
