import { execFile, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDemoModule } from '../../scripts/lib/demo/module';
import { githubClaims, gitlabClaims, startCiIssuers, type CiIssuers } from '../fixtures/ci-issuers';
import { writeDist } from '../scripts/helpers';
import { writeGoreleaserRelease } from '../fixtures/goreleaser';
import { expectServedAndInstalled } from './goreleaser-install';
import { get, getBytes } from './http';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';
import { launchChromium } from '../fixtures/browser';
import { CHROMIUM, missing, terraform } from '../tools';

/**
 * The goal of keyless CI publishing, end to end: a GitHub Actions-shaped job
 * whose environment holds only what a runner sets (the OIDC token request
 * URL and token) publishes a provider — signed by the key the registry holds
 * — and a GitLab-shaped job with only its `id_tokens` variable publishes a
 * module, through `wrangler dev` over HTTPS with the real CLIs; then real
 * `terraform init` installs both and verifies the provider's signature, and
 * `gpg --verify` checks it independently. No Cloudflare credential and no
 * private key is in either job's environment. Hostile jobs are refused with
 * nothing published and an audit entry of the refusal.
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const HOST = 'registry.example.com';
const SECRET = 'keyless-e2e-signing-key-secret-0123456789abcdef';
const PROVIDER_REPO = 'acme/terraform-provider-thing';
// The independent DSSE verifier (Debian's python3-securesystemslib; .ci/run installs it): required in CI.
const PYTHON = '/usr/bin/python3';
const independentVerifier = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import securesystemslib.signer']).status === 0;
const MODULE_PROJECT = 'acme/terraform-aws-vpc';

let dir: string;
let stateDir: string;
let certificate: Certificate;
let ci: CiIssuers;
let server: DevServer;
let heldKeyId: string;
let publishToken: string;
const AXE = readFileSync(join(root, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs scripts/NAME.ts with exactly `env` (plus PATH/HOME): nothing leaks in from the test's environment. */
async function script(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<Result> {
  try {
    const { stdout, stderr } = await run(tsx, [join(root, 'scripts', `${name}.ts`), ...args], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: dir, NO_COLOR: '1', ...env },
      timeout: 180_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The operator's local CLI on the registry's state (before the server starts). */
async function operator(name: string, args: string[]): Promise<Result> {
  const result = await script(name, [...args, '--persist-to', stateDir], { SIGNING_KEY_SECRET: SECRET });
  if (result.code !== 0) throw new Error(`npm run ${name} -- ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
  return result;
}

/** What a GitHub-hosted runner sets for a job with `permissions: id-token: write` (and nothing registry-specific but the audience). */
function githubRunnerEnv(): NodeJS.ProcessEnv {
  return {
    GITHUB_ACTIONS: 'true',
    CI: 'true',
    GITHUB_REPOSITORY: PROVIDER_REPO,
    GITHUB_REF: 'refs/tags/v1.0.0',
    GITHUB_WORKSPACE: dir,
    ...ci.githubRunnerEnv(),
    // The registry is reached as https://localhost:PORT here; its REGISTRY_HOSTNAME is registry.example.com.
    EDGE_REGISTRY_AUDIENCE: HOST,
    NODE_EXTRA_CA_CERTS: certificate.certPath,
  };
}

function expectNoCredentials(env: NodeJS.ProcessEnv): void {
  for (const name of Object.keys(env)) expect(name).not.toMatch(/CLOUDFLARE|^R2_|SIGNING_KEY|^EDGE_REGISTRY_TOKEN$/);
}

const https = (path: string) => get(`${server.origin}${path}`, { ca: certificate.pem, headers: { 'accept-encoding': 'identity' } });

async function auditEntries(): Promise<{ action: string; outcome: string; target: string; reason?: string; actor: Record<string, string> }[]> {
  const result = await script('audit', ['--namespace', 'acme', '--json', '--persist-to', stateDir], {});
  if (result.code !== 0) throw new Error(`npm run audit exited ${result.code}:\n${result.stderr}`);
  return (JSON.parse(result.stdout) as { entries: [] }).entries;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-keyless-e2e-'));
  stateDir = join(dir, 'state');
  certificate = makeCertificate(dir);
  ci = await startCiIssuers();
  // The operator, once: a key the registry holds, and the CI jobs the namespace trusts.
  const generated = await operator('keys', ['generate', '--namespace', 'acme', '--held-by-registry', '--type', 'ecc', '--json']);
  heldKeyId = (JSON.parse(generated.stdout) as { key_id: string }).key_id;
  await operator('publisher', [
    'add',
    '--namespace',
    'acme',
    '--issuer',
    ci.github.url,
    '--repository',
    PROVIDER_REPO,
    '--workflow',
    'release.yml',
    '--ref',
    'refs/tags/v*',
    '--environment',
    'release',
    '--repository-id',
    '123456',
    '--owner-id',
    '654321',
    '--package',
    'acme/thing',
  ]);
  await operator('publisher', [
    'add',
    '--namespace',
    'acme',
    '--issuer',
    ci.gitlab.url,
    '--project-path',
    MODULE_PROJECT,
    '--ref',
    'refs/tags/v*',
    '--project-id',
    '4242',
    '--namespace-id',
    '42',
    '--package',
    'acme/vpc/aws',
  ]);
  publishToken = (await operator('token', ['create', '--publish', 'acme/thing', '--name', 'no-provenance'])).stdout.trimEnd().split('\n').at(-1)!;
  server = await startDevServer({ stateDir, port: await freePort(), certificate, vars: { SIGNING_KEY_SECRET: SECRET, REGISTRY_HOSTNAME: HOST } });
}, 300_000);

afterAll(async () => {
  await server?.stop();
  await ci?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('keyless publishing from CI', () => {
  it('a GitHub Actions-shaped release job with only its OIDC token publishes a provider, signed by the registry-held key', async () => {
    const dist = await writeDist(join(dir, 'dist'), 'thing', '1.0.0', { platforms: ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'] });
    ci.githubJob = githubClaims(PROVIDER_REPO, { workflow: 'release.yml', ref: 'refs/tags/v1.0.0', environment: 'release', runId: '4242' });
    const env = githubRunnerEnv();
    expectNoCredentials(env);
    const result = await script('publish-provider', [dist, '--namespace', 'acme', '--registry', server.origin, '--json'], env);
    expect(result.code, `${result.stderr}\n--- wrangler dev ---\n${server.log().slice(-3000)}`).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ version: '1.0.0', status: 'published', key_id: heldKeyId });
    expect(ci.github.hits.token).toBeGreaterThan(0);

    const versions = JSON.parse((await https('/v1/providers/acme/thing/versions')).body.toString()) as { versions: { version: string }[] };
    expect(versions.versions.map((v) => v.version)).toEqual(['1.0.0']);
    const entries = await auditEntries();
    expect(entries.find((e) => e.action === 'provider.publish' && e.outcome === 'ok')?.actor).toMatchObject({
      kind: 'ci',
      issuer: ci.github.url,
      repository: PROVIDER_REPO,
      ref: 'refs/tags/v1.0.0',
      runId: '4242/1',
      environment: 'release',
      workflow: `${PROVIDER_REPO}/.github/workflows/release.yml@refs/tags/v1.0.0`,
    });
  });

  it('gpg --verify accepts the SHA256SUMS signature the registry made, with the key it serves', async () => {
    const download = JSON.parse((await https('/v1/providers/acme/thing/1.0.0/download/linux/amd64')).body.toString()) as {
      shasums_url: string;
      shasums_signature_url: string;
      signing_keys: { gpg_public_keys: { key_id: string; ascii_armor: string }[] };
    };
    expect(download.signing_keys.gpg_public_keys.map((k) => k.key_id)).toEqual([heldKeyId]);
    const sums = await getBytes(new URL(download.shasums_url, server.origin).href, { ca: certificate.pem });
    const signature = await getBytes(new URL(download.shasums_signature_url, server.origin).href, { ca: certificate.pem });
    const home = join(dir, 'gnupg');
    await mkdir(home, { recursive: true });
    chmodSync(home, 0o700);
    await writeFile(join(dir, 'SHA256SUMS'), sums);
    await writeFile(join(dir, 'SHA256SUMS.sig'), signature);
    try {
      spawnSync('gpg', ['--batch', '--homedir', home, '--import'], { input: download.signing_keys.gpg_public_keys[0]!.ascii_armor });
      const verify = spawnSync('gpg', ['--batch', '--homedir', home, '--status-fd', '1', '--verify', join(dir, 'SHA256SUMS.sig'), join(dir, 'SHA256SUMS')], {
        encoding: 'utf8',
      });
      expect(verify.status, verify.stderr).toBe(0);
      expect(verify.stdout).toMatch(new RegExp(`VALIDSIG [0-9A-F]*${heldKeyId} `));
    } finally {
      spawnSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
    }
  });

  it('a GitLab CI-shaped job with only its id_tokens variable publishes a module', async () => {
    const tree = join(dir, 'module');
    writeDemoModule(tree, '1.0.0');
    const env: NodeJS.ProcessEnv = {
      GITLAB_CI: 'true',
      CI: 'true',
      EDGE_REGISTRY_ID_TOKEN: await ci.gitlab.mint({ ...gitlabClaims(MODULE_PROJECT, { ref: 'v1.0.0' }), aud: HOST }),
      NODE_EXTRA_CA_CERTS: certificate.certPath,
    };
    expectNoCredentials(env);
    const result = await script(
      'publish-module',
      [tree, '--namespace', 'acme', '--name', 'vpc', '--system', 'aws', '--version', '1.0.0', '--registry', server.origin, '--json'],
      env,
    );
    expect(result.code, `${result.stderr}\n--- wrangler dev ---\n${server.log().slice(-3000)}`).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'published' });
    const entries = await auditEntries();
    expect(entries.find((e) => e.action === 'module.publish' && e.outcome === 'ok')?.actor).toMatchObject({
      kind: 'ci',
      issuer: ci.gitlab.url,
      repository: MODULE_PROJECT,
      ref: 'refs/tags/v1.0.0',
    });
  });

  it('both releases carry signed build provenance: npm run verify passes, and the independent verifier agrees', async () => {
    const env = { NODE_EXTRA_CA_CERTS: certificate.certPath };
    const provider = await script(
      'verify',
      [`${HOST}/acme/thing`, '1.0.0', '--repository', PROVIDER_REPO, '--workflow', 'release.yml', '--registry', server.origin, '--json'],
      env,
    );
    expect(provider.code, provider.stderr).toBe(0);
    expect(JSON.parse(provider.stdout)).toMatchObject({
      repository: PROVIDER_REPO,
      repositoryId: '123456',
      workflow: '.github/workflows/release.yml',
      ref: 'refs/tags/v1.0.0',
      commit: 'a'.repeat(40),
    });
    expect(provider.stderr).toMatch(/verified: .* was built from acme\/terraform-provider-thing \(id 123456\)/);
    const module = await script('verify', [`${HOST}/acme/vpc/aws`, '1.0.0', '--repository', MODULE_PROJECT, '--registry', server.origin], env);
    expect(module.code, module.stderr).toBe(0);

    // The page of the version says so, linking the commit and the run.
    const page = (await https('/providers/acme/thing/1.0.0')).body.toString();
    expect(page).toMatch(
      /Built from <a href="[^"]+\/acme\/terraform-provider-thing\/commit\/a{40}">acme\/terraform-provider-thing@aaaaaaa<\/a> by release\.yml, <a href="[^"]+\/actions\/runs\/4242\/attempts\/1">run 4242<\/a> — verified/,
    );

    // The independent check: the envelope, the key set and the served files, through Debian's securesystemslib.
    const envelope = (await https('/v1/provenance/providers/acme/thing/1.0.0')).body;
    const statement = JSON.parse(Buffer.from(JSON.parse(envelope.toString()).payload, 'base64').toString()) as { subject: { name: string }[] };
    console.log(`--- provenance statement of ${HOST}/acme/thing 1.0.0 ---\n${JSON.stringify(statement, null, 2)}`);
    await writeFile(join(dir, 'envelope.json'), envelope);
    await writeFile(join(dir, 'keys.json'), (await https('/v1/provenance/keys')).body);
    const files: string[] = [];
    for (const { name } of statement.subject) {
      const path = join(dir, 'served', name);
      await mkdir(join(dir, 'served'), { recursive: true });
      await writeFile(path, await getBytes(`${server.origin}/v1/archives/${HOST}/acme/thing/1.0.0/${name}`, { ca: certificate.pem }));
      files.push(path);
    }
    if (!independentVerifier) {
      if (process.env.CI) throw new Error(`${PYTHON} with securesystemslib is missing: apt-get install python3-securesystemslib (.ci/run does)`);
      console.warn('skipping the independent DSSE verifier: /usr/bin/python3 with securesystemslib is not installed');
      return;
    }
    const checked = spawnSync(PYTHON, [join(root, 'test', 'provenance', 'verify_dsse.py'), join(dir, 'envelope.json'), join(dir, 'keys.json'), ...files], {
      encoding: 'utf8',
    });
    console.log(`--- independent verifier ---\n${checked.stdout}${checked.stderr}`);
    expect(checked.status, checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/ed25519 signature over DSSEv1 PAE verified/);
    // …and it refuses a file that is not the one stated.
    const forged = join(dir, 'served', statement.subject[0]!.name);
    const bytes = readFileSync(forged);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
    await writeFile(forged, bytes);
    const refused = spawnSync(PYTHON, [join(root, 'test', 'provenance', 'verify_dsse.py'), join(dir, 'envelope.json'), join(dir, 'keys.json'), ...files], {
      encoding: 'utf8',
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/NOT VERIFIED: .* hashes to/);
  });

  it("npm run verify catches a changed byte of a file, a changed envelope, another release's statement, and the wrong repository or workflow", async () => {
    // A registry in the middle that changes one thing per mode; everything else is passed through from the dev server.
    let mode = '';
    let origin = '';
    const proxy: Server = createServer((request, response) => {
      void (async () => {
        let path = request.url!;
        if (mode === 'other' && path === '/v1/provenance/providers/acme/thing/1.0.0') path = '/v1/provenance/modules/acme/vpc/aws/1.0.0';
        const upstream = await get(`${server.origin}${path}`, { ca: certificate.pem, headers: { 'accept-encoding': 'identity' } });
        let body = upstream.body;
        // The download document's URLs are absolute on the origin asked (for Renovate): keep the client on this proxy.
        if (String(upstream.headers['content-type'] ?? '').includes('json')) body = Buffer.from(body.toString().replaceAll(server.origin, origin));
        if (mode === 'zip' && path.endsWith('_linux_amd64.zip')) {
          body = Buffer.from(body);
          body[100] = body[100]! ^ 1;
        }
        if (mode === 'envelope' && path.startsWith('/v1/provenance/providers/')) {
          const envelope = JSON.parse(body.toString()) as { payload: string };
          const payload = Buffer.from(envelope.payload, 'base64');
          payload[payload.length - 5] = payload[payload.length - 5]! ^ 1;
          body = Buffer.from(JSON.stringify({ ...envelope, payload: payload.toString('base64') }));
        }
        response.writeHead(upstream.status, { 'content-type': String(upstream.headers['content-type'] ?? 'application/octet-stream') });
        response.end(body);
      })().catch((error: Error) => {
        response.writeHead(502);
        response.end(String(error.message));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const verify = (args: string[] = []) => script('verify', [`${HOST}/acme/thing`, '1.0.0', '--registry', origin, ...args], {});
    try {
      mode = '';
      expect((await verify(['--repository', PROVIDER_REPO])).code).toBe(0);
      const cases: [string, string[], RegExp][] = [
        ['zip', [], /terraform-provider-thing_1\.0\.0_linux_amd64\.zip.* hash/],
        ['envelope', [], /signature .* does not verify/],
        ['other', [], /the statement is about .*\/acme\/vpc\/aws 1\.0\.0, not .*\/acme\/thing 1\.0\.0/],
        [
          '',
          ['--repository', 'acme/terraform-provider-other'],
          /built from repository acme\/terraform-provider-thing \(id 123456\), expected acme\/terraform-provider-other/,
        ],
        ['', ['--workflow', 'ci.yml'], /built by workflow \.github\/workflows\/release\.yml, expected ci\.yml/],
      ];
      for (const [m, args, message] of cases) {
        mode = m;
        const result = await verify(args);
        expect(result.code, `${m} ${args.join(' ')}: ${result.stderr}`).toBe(1);
        expect(result.stderr, m).toMatch(/provenance does not match/);
        expect(result.stderr, m).toMatch(message);
      }
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it.skipIf(missing('terraform', terraform))("real terraform init installs the provider (verifying the registry's signature) and the module", async () => {
    const work = join(dir, 'terraform');
    await mkdir(work, { recursive: true });
    await writeFile(
      join(work, 'main.tf'),
      `terraform {
  required_providers {
    thing = {
      source  = "${HOST}/acme/thing"
      version = "~> 1.0"
    }
  }
}

module "vpc" {
  source  = "${HOST}/acme/vpc/aws"
  version = "1.0.0"
}
`,
    );
    // Terraform wants a dotted module host: point registry.example.com's services at the dev server.
    await writeFile(
      join(work, 'cli.tfrc'),
      `host "${HOST}" {\n  services = {\n    "providers.v1" = "${server.origin}/v1/providers/"\n    "modules.v1" = "${server.origin}/v1/modules/"\n  }\n}\n`,
    );
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: work,
      TF_CLI_CONFIG_FILE: join(work, 'cli.tfrc'),
      SSL_CERT_FILE: certificate.certPath,
      CHECKPOINT_DISABLE: '1',
      TF_IN_AUTOMATION: '1',
    };
    let output: string;
    try {
      const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color', '-backend=false'], { cwd: work, env, timeout: 120_000 });
      output = stdout + stderr;
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`terraform init failed:\n${stdout}\n${stderr}\n--- wrangler dev ---\n${server.log().slice(-3000)}`);
    }
    console.log(`--- terraform init (keyless-published provider and module) ---\n${output}`);
    expect(output).toContain(`Installed ${HOST}/acme/thing v1.0.0 (self-signed, key ID ${heldKeyId})`);
    const modules = JSON.parse(readFileSync(join(work, '.terraform', 'modules', 'modules.json'), 'utf8')) as { Modules: { Key: string; Version?: string }[] };
    expect(modules.Modules.find((m) => m.Key === 'vpc')?.Version).toBe('1.0.0');
  });

  it('hostile jobs are refused through the real CLI with nothing published, and each refusal is audited', async () => {
    const dist = await writeDist(join(dir, 'dist-hostile'), 'thing', '1.1.0', { platforms: ['linux_amd64'] });
    const attempt = async (claims: Record<string, unknown>, extra: NodeJS.ProcessEnv = {}) => {
      ci.githubJob = claims;
      return script('publish-provider', [dist, '--namespace', 'acme', '--registry', server.origin, '--json'], { ...githubRunnerEnv(), ...extra });
    };
    const cases: [string, Result, RegExp][] = [
      [
        'another repository',
        await attempt(githubClaims('acme/terraform-provider-other', { ref: 'refs/tags/v1.1.0', environment: 'release' })),
        /matches none of the trusted publishers/,
      ],
      [
        'a recreated repository of the trusted name (other ids)',
        await attempt({
          ...githubClaims(PROVIDER_REPO, { ref: 'refs/tags/v1.1.0', environment: 'release' }),
          repository_id: '999001',
          repository_owner_id: '999002',
        }),
        /has the trusted name but not the trusted id/,
      ],
      [
        'another workflow',
        await attempt(githubClaims(PROVIDER_REPO, { workflow: 'ci.yml', ref: 'refs/tags/v1.1.0', environment: 'release' })),
        /matches none of the trusted publishers/,
      ],
      [
        'a branch, not a tag',
        await attempt(githubClaims(PROVIDER_REPO, { ref: 'refs/heads/main', environment: 'release' })),
        /matches none of the trusted publishers/,
      ],
      ['outside the environment', await attempt(githubClaims(PROVIDER_REPO, { ref: 'refs/tags/v1.1.0' })), /matches none of the trusted publishers/],
      [
        'a token for another audience',
        await attempt(githubClaims(PROVIDER_REPO, { ref: 'refs/tags/v1.1.0', environment: 'release' }), { EDGE_REGISTRY_AUDIENCE: 'registry.other.example' }),
        /"aud"/,
      ],
      [
        "the trusted module project's job, for the provider (least privilege per package)",
        await script('publish-provider', [dist, '--namespace', 'acme', '--registry', server.origin, '--json'], {
          EDGE_REGISTRY_ID_TOKEN: await ci.gitlab.mint({ ...gitlabClaims(MODULE_PROJECT, { ref: 'v1.1.0' }), aud: HOST }),
          NODE_EXTRA_CA_CERTS: certificate.certPath,
        }),
        /may not publish or change acme\/thing: its trusted publisher allows only acme\/vpc\/aws/,
      ],
      [
        'a token replayed after it expired',
        await script('publish-provider', [dist, '--namespace', 'acme', '--registry', server.origin, '--json'], {
          EDGE_REGISTRY_ID_TOKEN: await ci.gitlab.mint({
            ...gitlabClaims(MODULE_PROJECT, { ref: 'v1.1.0' }),
            aud: HOST,
            iat: now() - 900,
            nbf: now() - 900,
            exp: now() - 300,
          }),
          NODE_EXTRA_CA_CERTS: certificate.certPath,
        }),
        /expired/,
      ],
    ];
    for (const [what, result, message] of cases) {
      expect(result.code, `${what}: ${result.stderr}`).toBe(1);
      expect(result.stderr, what).toMatch(message);
      expect(`${result.stdout}${result.stderr}`).not.toMatch(/eyJ[A-Za-z0-9_-]{20,}\./); // no token printed
    }
    const versions = JSON.parse((await https('/v1/providers/acme/thing/versions')).body.toString()) as { versions: { version: string }[] };
    expect(versions.versions.map((v) => v.version)).toEqual(['1.0.0']);
    expect((await https('/v1/archives/registry.example.com/acme/thing/1.1.0/terraform-provider-thing_1.1.0_linux_amd64.zip')).status).toBe(404);
    const refused = (await auditEntries()).filter((e) => e.action === 'provider.publish' && e.outcome === 'refused');
    expect(refused.length).toBeGreaterThanOrEqual(cases.length);
    expect(refused.map((e) => e.actor.repository)).toEqual(expect.arrayContaining(['acme/terraform-provider-other', PROVIDER_REPO, MODULE_PROJECT]));
  });

  it('the version pages show both cases in a browser — built from the verified repository, or plainly no build provenance — axe-clean, no CSP errors', async () => {
    // A version published with a publish token (the registry signs SHA256SUMS with its held key): no build provenance.
    const dist = await writeDist(join(dir, 'dist-token'), 'thing', '0.9.0', { platforms: ['linux_amd64'] });
    const published = await script('publish-provider', [dist, '--namespace', 'acme', '--registry', server.origin, '--json'], {
      EDGE_REGISTRY_TOKEN: publishToken,
      NODE_EXTRA_CA_CERTS: certificate.certPath,
    });
    expect(published.code, published.stderr).toBe(0);
    const unproven = await script('verify', [`${HOST}/acme/thing`, '0.9.0', '--registry', server.origin], { NODE_EXTRA_CA_CERTS: certificate.certPath });
    expect(unproven.code).toBe(1);
    expect(unproven.stderr).toMatch(/has no build provenance: it was published by a publish token/);
    if (!existsSync(CHROMIUM)) {
      if (process.env.CI) throw new Error(`${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ ignoreHTTPSErrors: true });
      const seen: Record<string, { text: string; links: string[]; violations: string[]; errors: string[] }> = {};
      for (const path of ['/providers/acme/thing/1.0.0', '/providers/acme/thing/0.9.0', '/modules/acme/vpc/aws/1.0.0']) {
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error') errors.push(m.text());
        });
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(`${server.origin}${path}`);
        const fact = page.locator('dt:text-is("Provenance") + dd');
        await page.evaluate(AXE);
        const result = await page.evaluate(() =>
          (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string | null }[] }> } }).axe.run(),
        );
        seen[path] = {
          text: (await fact.innerText()).replace(/\s+/g, ' '),
          links: await fact.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? '')),
          violations: result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id),
          errors,
        };
        await page.close();
      }
      console.log(`--- the provenance fact of the version pages ---\n${JSON.stringify(seen, null, 2)}`);
      const built = seen['/providers/acme/thing/1.0.0']!;
      expect(built.text).toMatch(/^Built from acme\/terraform-provider-thing@aaaaaaa by release\.yml, run 4242 — verified/);
      expect(built.links[0]).toMatch(/\/acme\/terraform-provider-thing\/commit\/a{40}$/);
      expect(built.links[1]).toMatch(/\/acme\/terraform-provider-thing\/actions\/runs\/4242\/attempts\/1$/);
      expect(built.links[2]).toBe('/v1/provenance/providers/acme/thing/1.0.0');
      expect(seen['/providers/acme/thing/0.9.0']!.text).toMatch(/^No build provenance: published with a token or the CLI/);
      expect(seen['/modules/acme/vpc/aws/1.0.0']!.text).toMatch(/^Built from acme\/terraform-aws-vpc@bbbbbbb by \.gitlab-ci\.yml, run 1001\/2002 — verified/);
      for (const [path, s] of Object.entries(seen)) {
        expect(s.violations, path).toEqual([]);
        expect(s.errors, path).toEqual([]);
      }
    } finally {
      await browser.close();
    }
  });

  it.skipIf(missing('terraform', terraform))(
    "a goreleaser release (the scaffolding config, unsigned: the job has no GPG key) from a keyless job: the root manifest's protocols 6.0, SHA256SUMS served as goreleaser wrote it and signed by the registry-held key; terraform init installs it",
    async () => {
      // The job's workspace is the repository: goreleaser left dist/ there and the manifest in the root.
      const release = await writeGoreleaserRelease(join(dir, 'workspace'), 'thing', '2.0.0');
      ci.githubJob = githubClaims(PROVIDER_REPO, { workflow: 'release.yml', ref: 'refs/tags/v2.0.0', environment: 'release', runId: '4343' });
      const env = { ...githubRunnerEnv(), GITHUB_REF: 'refs/tags/v2.0.0', GITHUB_WORKSPACE: release.root };
      expectNoCredentials(env);
      const result = await script('publish-provider', [release.dist, '--namespace', 'acme', '--registry', server.origin, '--json'], env);
      expect(result.code, `${result.stderr}\n--- wrangler dev ---\n${server.log().slice(-3000)}`).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ version: '2.0.0', status: 'published', key_id: heldKeyId, protocols: ['6.0'] });
      expect(JSON.parse(result.stdout).platforms).toHaveLength(13);
      const output = await expectServedAndInstalled({
        origin: server.origin,
        certificate,
        host: HOST,
        namespace: 'acme',
        release,
        keyId: heldKeyId,
        work: join(dir, 'terraform-goreleaser'),
      });
      console.log(`--- terraform init of a keyless-published goreleaser release ---\n${output}`);
    },
  );
});

function now(): number {
  return Math.floor(Date.now() / 1000);
}
