import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readProductionConfig } from '../../../scripts/lib/deploy/production-config';

/**
 * `npm run deploy` end to end without a Cloudflare account: the real script,
 * a stand-in `wrangler` first on PATH (fake-wrangler.mjs: the account as a
 * JSON file, answers in wrangler 4.86's recorded formats), a copy of the
 * project's wrangler.toml, and a local HTTP server as the deployed URL for
 * the smoke test. Then the configuration it wrote goes through the real
 * `wrangler deploy --dry-run` for the production environment.
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
const realWrangler = join(root, 'node_modules', '.bin', 'wrangler');

let dir: string;
let bin: string;
let server: Server;
let smokeUrl: string;
let discoveryStatus = 200;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-deploy-'));
  bin = join(dir, 'bin');
  await mkdir(bin);
  await symlink(join(import.meta.dirname, 'fake-wrangler.mjs'), join(bin, 'wrangler'));
  server = createServer((request, response) => {
    const ok = request.url === '/.well-known/terraform.json' && discoveryStatus === 200;
    response.writeHead(ok ? 200 : discoveryStatus === 200 ? 404 : discoveryStatus, { 'content-type': 'application/json' });
    response.end(ok ? '{"providers.v1":"/v1/providers/"}' : '{"errors":["not here"]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  smokeUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

afterAll(async () => {
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

interface Account {
  loggedIn: boolean;
  kv: { id: string; title: string }[];
  buckets: string[];
  worker: { secrets: string[]; deploys: number; config: string | null } | null;
  secretLengths?: Record<string, number>;
  lifecycle?: Record<string, { name: string; prefix: string; expireDays: number; abortMultipartDays: number }[]>;
}

let project: string;
const paths = () => ({ state: join(project, 'account.json'), log: join(project, 'wrangler.log'), toml: join(project, 'wrangler.toml') });

beforeEach(async () => {
  project = await mkdtemp(join(dir, 'project-'));
  await copyFile(join(root, 'wrangler.toml'), paths().toml);
  await writeFile(paths().log, '');
  await setAccount({ loggedIn: true, kv: [{ id: '1a2b3c4d5e6f708192a3b4c5d6e7f809', title: 'other-app-cache' }], buckets: ['logs-archive'], worker: null });
});

async function setAccount(account: Account): Promise<void> {
  await writeFile(paths().state, JSON.stringify(account));
}
async function account(): Promise<Account> {
  return JSON.parse(await readFile(paths().state, 'utf8')) as Account;
}
/** The wrangler commands the deploy ran, in order. */
async function commands(): Promise<string[]> {
  return (await readFile(paths().log, 'utf8'))
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as string[]).join(' '));
}

async function deploy(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {
    PATH: `${bin}:${process.env.PATH}`,
    HOME: process.env.HOME,
    FAKE_WRANGLER_STATE: paths().state,
    FAKE_WRANGLER_LOG: paths().log,
    ...extraEnv,
  };
  try {
    const { stdout, stderr } = await run(
      join(root, 'node_modules', '.bin', 'tsx'),
      [join(root, 'scripts', 'deploy.ts'), '--config', paths().toml, '--url', smokeUrl, '--smoke-timeout', '2', ...args],
      { cwd: project, env, timeout: 60_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

const reads = ['whoami --json', 'kv namespace list', 'r2 bucket list'];
const isRead = (c: string) => reads.includes(c) || c.startsWith('secret list') || c.startsWith('r2 bucket lifecycle list');
const LIFECYCLE_ADDS = [
  'r2 bucket lifecycle add edge-registry edge-registry-uploads .uploads/ --expire-days 2 --abort-multipart-days 2',
  'r2 bucket lifecycle add edge-registry edge-registry-ci-token-uses .ci-token-uses/ --expire-days 1',
  'r2 bucket lifecycle add edge-registry edge-registry-login-codes .login-codes/ --expire-days 1',
  'r2 bucket lifecycle add edge-registry edge-registry-ended-sessions .ended-sessions/ --expire-days 1',
];

describe('npm run deploy', () => {
  it('--dry-run prints every command and file change and changes nothing', async () => {
    const tomlBefore = await readFile(paths().toml, 'utf8');
    const before = await account();
    const { code, stderr } = await deploy(['--hostname', 'registry.acme.com', '--dry-run']);
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('dry run: nothing is changed');
    expect(stderr).toContain('$ wrangler kv namespace create edge-registry');
    expect(stderr).toContain('$ wrangler r2 bucket create edge-registry');
    for (const add of LIFECYCLE_ADDS) expect(stderr).toContain(`$ wrangler ${add}`);
    expect(stderr).toMatch(/\[env\.production\] routes: \(added\) → \[\{ pattern = "registry\.acme\.com", custom_domain = true \}\]/);
    expect(stderr).toMatch(/\[env\.production\.vars\] REGISTRY_HOSTNAME: "registry\.example\.com" → "registry\.acme\.com"/);
    expect(stderr).toContain(`$ wrangler deploy --config ${paths().toml} --env production --secrets-file`);
    expect(stderr).toContain(`GET ${smokeUrl}/.well-known/terraform.json`);
    expect(await readFile(paths().toml, 'utf8')).toBe(tomlBefore);
    expect(await account()).toEqual(before);
    expect((await commands()).every(isRead)).toBe(true);
  });

  it('a dry run while logged out still shows the whole plan', async () => {
    await setAccount({ loggedIn: false, kv: [], buckets: [], worker: null });
    const { code, stderr } = await deploy(['--hostname', 'registry.acme.com', '--dry-run']);
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('not logged in');
    expect(stderr).toContain('$ wrangler kv namespace create edge-registry');
    expect(await commands()).toEqual(['whoami --json']);
  });

  it('logged out: stops before changing anything and says how to log in, and which token permissions', async () => {
    await setAccount({ loggedIn: false, kv: [], buckets: [], worker: null });
    const { code, stderr } = await deploy(['--hostname', 'registry.acme.com']);
    expect(code).toBe(1);
    expect(stderr).toContain('deploy stopped at "check wrangler login": wrangler is not authenticated');
    expect(stderr).toContain('npx wrangler login');
    expect(stderr).toContain('CLOUDFLARE_API_TOKEN');
    expect(stderr).toContain('Zone · Workers Routes · Edit');
    expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(await commands()).toEqual(['whoami --json']);
  });

  it('on a fresh account: creates, configures, deploys with a signing secret, smoke-tests; a second run only deploys', async () => {
    const first = await deploy(['--hostname', 'registry.acme.com']);
    expect(first.code, first.stderr).toBe(0);
    const ran = (await commands()).filter((c) => !isRead(c));
    expect(ran).toEqual([
      'kv namespace create edge-registry',
      'r2 bucket create edge-registry',
      ...LIFECYCLE_ADDS,
      expect.stringMatching(new RegExp(`^deploy --config ${paths().toml} --env production --secrets-file /.+/secrets\\.json$`)),
    ]);
    const state = await account();
    expect(state.kv.map((n) => n.title)).toEqual(['other-app-cache', 'edge-registry']);
    expect(state.buckets).toEqual(['logs-archive', 'edge-registry']);
    expect(state.lifecycle?.['edge-registry']).toEqual([
      { name: 'edge-registry-uploads', prefix: '.uploads/', expireDays: 2, abortMultipartDays: 2 },
      { name: 'edge-registry-ci-token-uses', prefix: '.ci-token-uses/', expireDays: 1, abortMultipartDays: 0 },
      { name: 'edge-registry-login-codes', prefix: '.login-codes/', expireDays: 1, abortMultipartDays: 0 },
      { name: 'edge-registry-ended-sessions', prefix: '.ended-sessions/', expireDays: 1, abortMultipartDays: 0 },
    ]);
    expect(state.worker?.secrets).toEqual(['URL_SIGNING_SECRET']);
    expect(state.secretLengths?.URL_SIGNING_SECRET).toBe(44); // 32 random bytes, base64
    const config = await readProductionConfig(paths().toml, 'production');
    expect(config).toEqual({
      workerName: 'edge-registry',
      kvNamespaceId: state.kv[1]!.id,
      bucketName: 'edge-registry',
      hostname: 'registry.acme.com',
      routes: [{ pattern: 'registry.acme.com', custom_domain: true }],
    });
    expect(state.worker?.config).toBe(await readFile(paths().toml, 'utf8')); // deployed with the written config
    // The temporary secrets file is gone.
    const secretsFile = ran[2 + LIFECYCLE_ADDS.length]!.split(' ').at(-1)!;
    await expect(readFile(secretsFile)).rejects.toThrow(/ENOENT/);
    expect(first.stderr).toContain('==> 1. create the KV namespace "edge-registry"');
    expect(first.stderr).toContain('https://edge-registry.acme.workers.dev');
    expect(first.stdout).toContain('npm run keys -- generate --namespace acme');
    expect(first.stdout).toContain('npm run token -- create');
    expect(first.stdout).toContain('credentials "registry.acme.com"');
    expect(first.stdout).toContain('source = "registry.acme.com/acme/acme"');

    const tomlAfterFirst = await readFile(paths().toml, 'utf8');
    await writeFile(paths().log, '');
    const second = await deploy([]); // the hostname is remembered
    expect(second.code, second.stderr).toBe(0);
    expect((await commands()).filter((c) => !isRead(c))).toEqual([`deploy --config ${paths().toml} --env production`]);
    expect(await readFile(paths().toml, 'utf8')).toBe(tomlAfterFirst);
    expect((await account()).worker?.deploys).toBe(2);
  });

  it("reuses what exists by name, keeps an operator's own lifecycle rule on a prefix, and sets a missing signing secret with secret put", async () => {
    await setAccount({
      loggedIn: true,
      kv: [{ id: '9f0c5a3e2b1d4c6e8a7f9b0d1c2e3f4a', title: 'edge-registry' }],
      buckets: ['edge-registry'],
      worker: { secrets: [], deploys: 1, config: null },
      lifecycle: { 'edge-registry': [{ name: 'my-own-login-codes-rule', prefix: '.login-codes/', expireDays: 3, abortMultipartDays: 0 }] },
    });
    const { code, stderr } = await deploy(['--hostname', 'registry.acme.com']);
    expect(code, stderr).toBe(0);
    expect((await commands()).filter((c) => !isRead(c))).toEqual([
      ...LIFECYCLE_ADDS.slice(0, 2),
      LIFECYCLE_ADDS[3]!,
      `secret put URL_SIGNING_SECRET --config ${paths().toml} --env production`,
      `deploy --config ${paths().toml} --env production`,
    ]);
    expect((await account()).secretLengths?.URL_SIGNING_SECRET).toBe(44);
    expect((await readProductionConfig(paths().toml, 'production')).kvNamespaceId).toBe('9f0c5a3e2b1d4c6e8a7f9b0d1c2e3f4a');
  });

  it('a secret in the environment shorter than 32 characters: refused naming it, before anything changes', async () => {
    const { code, stderr } = await deploy(['--hostname', 'registry.acme.com'], { SIGNING_KEY_SECRET: 'short-secret' });
    expect(code).toBe(1);
    expect(stderr).toMatch(/deploy stopped before changing anything: SIGNING_KEY_SECRET is 12 characters; at least 32 are required/);
    expect(stderr).toContain('(set in the environment)');
    expect(stderr).not.toContain('short-secret');
    expect(await commands()).toEqual([]);
  });

  it('a LOGIN_POLICY or OIDC setting the Worker cannot parse: refused naming it and where it is set, before anything changes', async () => {
    const toml = await readFile(paths().toml, 'utf8');
    await writeFile(
      paths().toml,
      toml.replace(
        '[env.production.vars]\n',
        `[env.production.vars]\nOIDC_ISSUER = "https://id.acme.com"\nOIDC_CLIENT_ID = "registry"\nLOGIN_POLICY = '{"rules":[{"if":{"prototype":"x"},"scopes":["*"]}]}'\n`,
      ),
    );
    const { code, stderr } = await deploy(['--hostname', 'registry.acme.com'], { URL_SIGNING_SECRET: 'u'.repeat(44) });
    expect(code).toBe(1);
    expect(stderr).toContain(
      'deploy stopped before changing anything: LOGIN_POLICY.rules[0].if: "prototype" cannot be a claim name (a JavaScript object\'s own name); name the ID token\'s claim, such as "groups" or "sub" (set in wrangler.toml)',
    );
    expect(await commands()).toEqual([]);
  });

  it('--release-files r2 without the R2 API token in the environment: refused saying how to make one, before anything changes', async () => {
    const { code, stderr } = await deploy(['--hostname', 'registry.acme.com', '--release-files', 'r2'], { R2_ACCESS_KEY_ID: '', R2_SECRET_ACCESS_KEY: '' });
    expect(code).toBe(1);
    expect(stderr).toMatch(/deploy stopped before changing anything: --release-files r2 needs R2_ACCESS_KEY_ID and R2_SECRET_ACCESS_KEY/);
    expect(stderr).toContain('Manage R2 API Tokens');
    expect(await commands()).toEqual([]);
  });

  it('--public-documents in private mode, or with an http origin: refused naming the setting and the fix, before anything changes', async () => {
    const privateMode = await deploy(['--hostname', 'registry.acme.com', '--public-documents', 'https://files.acme.com']);
    expect(privateMode.code).toBe(1);
    expect(privateMode.stderr).toContain('deploy stopped before changing anything: PUBLIC_DOCUMENTS=r2 needs ACCESS = "public"');
    expect(privateMode.stderr).toContain('(set in --public-documents)');
    const toml = await readFile(paths().toml, 'utf8');
    await writeFile(paths().toml, toml.replace(/^ACCESS = "private"$/m, 'ACCESS = "public"'));
    const http = await deploy(['--hostname', 'registry.acme.com', '--public-documents', 'http://files.acme.com']);
    expect(http.code).toBe(1);
    expect(http.stderr).toContain('FILES_ORIGIN "http://files.acme.com" must be https');
    expect(await commands()).toEqual([]);
  });

  it('--public-documents in public mode: writes PUBLIC_DOCUMENTS and FILES_ORIGIN into wrangler.toml, deploys, prints the manual steps', async () => {
    const toml = await readFile(paths().toml, 'utf8');
    await writeFile(paths().toml, toml.replace(/^ACCESS = "private"$/m, 'ACCESS = "public"'));
    const { code, stdout, stderr } = await deploy(['--hostname', 'registry.acme.com', '--public-documents', 'https://files.acme.com'], {
      URL_SIGNING_SECRET: 'u'.repeat(44),
    });
    expect(code, stderr).toBe(0);
    const written = await readProductionConfig(paths().toml, 'production');
    expect(written.filesOrigin).toBe('https://files.acme.com');
    expect(await readFile(paths().toml, 'utf8')).toContain('PUBLIC_DOCUMENTS = "r2"');
    expect((await commands()).some((c) => c.startsWith('deploy '))).toBe(true);
    expect(stdout).toContain('(http.host eq "files.acme.com" and http.request.uri.path contains "/.")');
    expect(stdout).toContain('npx wrangler r2 bucket domain add BUCKET --domain files.acme.com --zone-id ZONE_ID');
    expect(stdout).toContain('npm run static-documents -- --remote --env production');
    // The deployed Worker sends nobody to the files domain before that check passed (test/worker/static-documents.test.ts).
    expect(stdout).toContain('once the check passes the\n     Worker sends clients there (until then it serves provider metadata and files itself)');
  });

  it("a failing step names itself, shows wrangler's output and the fix; re-running continues from there", async () => {
    const failed = await deploy(['--hostname', 'registry.acme.com'], { FAKE_WRANGLER_FAIL: 'r2 bucket create' });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('deploy failed at "create the R2 bucket "edge-registry"');
    expect(failed.stderr).toContain('--- wrangler printed ---');
    expect(failed.stderr).toContain('Please enable R2 through the Cloudflare Dashboard. [code: 10042]');
    expect(failed.stderr).toContain('fix: enable R2 once for the account');
    expect((await account()).kv.filter((n) => n.title === 'edge-registry')).toHaveLength(1);

    await writeFile(paths().log, '');
    const again = await deploy(['--hostname', 'registry.acme.com']);
    expect(again.code, again.stderr).toBe(0);
    const ran = (await commands()).filter((c) => !isRead(c));
    expect(ran[0]).toBe('r2 bucket create edge-registry'); // the KV namespace is not created twice
    expect((await account()).kv.filter((n) => n.title === 'edge-registry')).toHaveLength(1);
  });

  it('a deployed URL that does not answer discovery fails the smoke test with the fix', async () => {
    discoveryStatus = 522;
    try {
      const { code, stderr } = await deploy(['--hostname', 'registry.acme.com']);
      expect(code).toBe(1);
      expect(stderr).toContain(`deploy failed at "check service discovery at ${smokeUrl}/.well-known/terraform.json"`);
      expect(stderr).toContain('HTTP 522');
      expect(stderr).toContain('custom domain can take a few minutes');
    } finally {
      discoveryStatus = 200;
    }
  });

  it('the configuration it writes passes `wrangler deploy --dry-run` for the production environment', async () => {
    const { code, stderr } = await deploy(['--hostname', 'registry.acme.com']);
    expect(code, stderr).toBe(0);
    const kvId = (await account()).kv.find((n) => n.title === 'edge-registry')!.id;
    // wrangler resolves main = "src/index.ts" next to the config: give the copy the project's sources.
    for (const name of ['src', 'node_modules', 'package.json', 'tsconfig.json']) await symlink(join(root, name), join(project, name));
    const outdir = join(project, 'out');
    // With the --secrets-file a first deploy passes (the signing secret goes up with the Worker).
    const secretsFile = join(project, 'secrets.json');
    await writeFile(secretsFile, JSON.stringify({ URL_SIGNING_SECRET: 'not-a-real-secret' }));
    const { stdout } = await run(realWrangler, ['deploy', '--dry-run', '--outdir', outdir, '--env', 'production', '--secrets-file', secretsFile], {
      cwd: project,
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1', CLOUDFLARE_API_TOKEN: '' },
      timeout: 120_000,
    });
    expect(stdout).toContain(`env.REGISTRY_KV (${kvId})`);
    expect(stdout).toContain('env.REGISTRY_R2 (edge-registry)');
    // Download counts: the Durable Object binding is per environment in wrangler (not inherited).
    expect(stdout).toContain('env.DOWNLOADS (DownloadCounter)');
    expect(stdout).toContain('env.REGISTRY_HOSTNAME ("registry.acme.com")');
    expect(stdout).toContain('env.ACCESS ("private")');
    expect(stdout).toContain('env.URL_SIGNING_SECRET ("(hidden)")');
    expect(stdout).toContain('--dry-run: exiting now.');
    await expect(readFile(join(outdir, 'index.js'), 'utf8')).resolves.toContain('providers.v1');
  });
});
