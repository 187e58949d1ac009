import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { readRegistryConfig } from '../../../scripts/lib/config';
import { openLocalStore } from '../../../scripts/lib/stores/local';
import { writeDemoModule } from '../../../scripts/lib/demo/module';
import { publishModule } from '../../../scripts/lib/module/publish';
import { startIdp, type IdpAccount, type RunningIdp } from '../../../scripts/lib/identity/idp';
import { publishIntoState } from '../local-publish';
import { generateRelease, generateSigningKey } from '../release';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from '../server';
import { launchChromium } from '../../fixtures/browser';
import { CHROMIUM, terraform } from '../../tools';

/**
 * Sign-in as people use it: a real OpenID Provider (oidc-provider, started
 * here as the company's identity provider), the registry under `wrangler
 * dev` over HTTPS in private mode with OIDC_* and LOGIN_POLICY, a private
 * provider (localhost:PORT/acme/thing) and module (acme/vpc/aws), Debian's
 * chromium for the person in front of the browser, and real terraform.
 */
const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');
export const ready = existsSync(CHROMIUM) && terraform !== undefined;

export const CLIENT_ID = 'edge-registry';
export const CLIENT_SECRET = 'e2e-idp-client-secret';
export const MODULE_HOST = 'registry.example.com';
export const POLICY = {
  rules: [
    { if: { groups: 'platform' }, scopes: ['acme'] },
    { if: { email_domain: 'acme.com' }, scopes: ['acme'] },
  ],
  admins: { groups: 'registry-admins' },
  token_days: 7,
};
export const ACCOUNTS: IdpAccount[] = [
  { login: 'alice', email: 'alice@acme.com', email_verified: true, groups: ['platform'], name: 'Alice' },
  // Claims a company address without the provider having verified it: the email_domain rule must not match.
  { login: 'mallory', email: 'mallory@acme.com', email_verified: false, groups: [], name: 'Mallory' },
  { login: 'carol', email: 'carol@acme.com', email_verified: true, groups: ['registry-admins'], name: 'Carol' },
];

export interface SignInWorld {
  dir: string;
  server: DevServer;
  idp: RunningIdp;
  certificate: Certificate;
  /** localhost:PORT: the registry's hostname (providers) and what `terraform login` is given. */
  hostname: string;
  browser: Browser;
  stop(): Promise<void>;
}

export async function startWorld(options: { vars?: Record<string, string>; publicClient?: boolean } = {}): Promise<SignInWorld> {
  const dir = await mkdtemp(join(tmpdir(), 'edge-registry-sign-in-'));
  const stateDir = join(dir, 'state');
  const port = await freePort();
  const hostname = `localhost:${port}`;
  const key = await generateSigningKey();
  const platform = `${process.platform}_${process.arch === 'x64' ? 'amd64' : process.arch}`;
  const release = await generateRelease(join(dir, 'dist'), 'thing', '1.3.0', [platform], key);
  await publishIntoState(stateDir, hostname, 'acme', [release], key);
  const config = await readRegistryConfig({ configPath: join(root, 'wrangler.toml'), persistTo: stateDir });
  const store = await openLocalStore(config);
  try {
    const tree = join(dir, 'module');
    writeDemoModule(tree, '1.0.0');
    await publishModule({ path: tree, namespace: 'acme', name: 'vpc', system: 'aws', version: '1.0.0', hostname, store, config });
  } finally {
    await store.close();
  }
  const certificate = makeCertificate(dir);
  const idp = await startIdp({
    port: await freePort(),
    clientId: CLIENT_ID,
    clientSecret: options.publicClient ? undefined : CLIENT_SECRET,
    redirectUris: [`https://${hostname}/oauth/callback`],
    accounts: ACCOUNTS,
  });
  const server = await startDevServer({
    stateDir,
    port,
    certificate,
    vars: {
      REGISTRY_HOSTNAME: hostname,
      ACCESS: 'private',
      URL_SIGNING_SECRET: 'e2e-sign-in-signing-secret-0123456789',
      OIDC_ISSUER: idp.issuer,
      OIDC_CLIENT_ID: CLIENT_ID,
      ...(options.publicClient ? {} : { OIDC_CLIENT_SECRET: CLIENT_SECRET }),
      LOGIN_POLICY: JSON.stringify(POLICY),
      ...options.vars,
    },
  });
  // Terraform's listener is on 127.0.0.1 only; its redirect URI says localhost, which may resolve to ::1 first.
  const browser = await launchChromium(['--host-resolver-rules=MAP localhost 127.0.0.1']);
  return {
    dir,
    server,
    idp,
    certificate,
    hostname,
    browser,
    async stop() {
      await browser.close().catch(() => {});
      await server.stop();
      await idp.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Signs in at the local provider's page (dev interactions: any password) and waits until the browser has left it. */
export async function signInAtProvider(page: Page, issuer: string, login: string): Promise<void> {
  await page.waitForURL((url) => url.toString().startsWith(issuer), { timeout: 30_000 });
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', 'any password');
  // The navigations after the provider's page, to tell whose answer an error was.
  const requested: string[] = [];
  page.on('request', (request) => {
    if (request.isNavigationRequest()) requested.push(request.url());
  });
  await Promise.all([
    // 'commit': the page after the provider may be an error status (a refusal), which 'load' would throw on.
    page
      .waitForURL((url) => !url.toString().startsWith(issuer), { timeout: 30_000, waitUntil: 'commit' })
      .catch((error: Error) => {
        // The last hop of `terraform login` is Terraform's own one-shot listener (ports 10000–10010), which
        // closes once it has the code; on a loaded machine the browser can see that as an empty response.
        // What the user relies on is Terraform's exit code and stored token, which the callers assert.
        if (
          /ERR_EMPTY_RESPONSE|ERR_CONNECTION_(REFUSED|RESET|CLOSED)/.test(error.message) &&
          /^http:\/\/(localhost|127\.0\.0\.1):100(0\d|10)\/login\?/.test(requested.at(-1) ?? '')
        )
          return;
        throw error;
      }),
    page.click('button[type="submit"]'),
  ]);
}

export interface LoginRun {
  /** Terraform's exit code (null when it was stopped because it waited forever). */
  code: number | null;
  output: string;
  /** The token Terraform stored for the host, if any. */
  token: string | undefined;
  /** What the browser showed last. */
  pageText: string;
  /** The browser was sent on to Terraform's own listener with a code (the last hop of login.v1), whatever that listener then answered. */
  reachedTerraform: boolean;
}

/** A fresh HOME (~/.terraform.d, ~/.terraformrc with `cliConfig`) for terraform; `home`'s env to run it with. */
export async function terraformHome(world: SignInWorld, name: string, cliConfig = ''): Promise<{ home: string; env: NodeJS.ProcessEnv }> {
  const home = join(world.dir, 'homes', name);
  // Terraform 1.11 writes credentials.tfrc.json into ~/.terraform.d but does not create that directory.
  await mkdir(join(home, '.terraform.d'), { recursive: true });
  // ~/.terraformrc, not TF_CLI_CONFIG_FILE: with that variable set Terraform skips ~/.terraform.d, where login stores tokens.
  await writeFile(join(home, '.terraformrc'), cliConfig);
  return {
    home,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      SSL_CERT_FILE: world.certificate.certPath,
      CHECKPOINT_DISABLE: '1',
      BROWSER: '/bin/false',
      DISPLAY: '',
    },
  };
}

/**
 * `terraform login HOST` as a person runs it: answers "yes", takes the URL
 * Terraform prints (its own listener on 127.0.0.1 waits for the redirect),
 * follows it in chromium through the provider's sign-in as `login`, then
 * reads the token Terraform wrote to its credentials file. `cli` runs
 * another binary the same way (`tofu login`: OpenTofu keeps the same file).
 */
export async function terraformLogin(
  world: SignInWorld,
  name: string,
  login: string,
  host = world.hostname,
  cliConfig = '',
  cli = terraform!,
): Promise<LoginRun> {
  const { home, env } = await terraformHome(world, name, cliConfig);
  const child = spawn(cli, ['login', host], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`terraform login printed no URL:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/Enter a value:/.test(output) && !child.stdin!.writableEnded) child.stdin!.end('yes\n');
      const match = /(https:\/\/[^\s'"]+\/oauth\/authorization\?[^\s'"]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`terraform login exited early:\n${output}`));
    });
  });
  const context = await world.browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  let pageText = '';
  const navigations: string[] = [];
  page.on('response', (response) => {
    if (response.request().isNavigationRequest()) navigations.push(`${response.status()} ${response.url().replace(/code=[^&]+/, 'code=…')}`);
  });
  let reachedTerraform = false;
  page.on('request', (request) => {
    if (request.isNavigationRequest() && /^http:\/\/(localhost|127\.0\.0\.1):100(0\d|10)\/login\?(.*&)?code=/.test(request.url())) reachedTerraform = true;
  });
  try {
    await page.goto(url);
    await signInAtProvider(page, world.idp.issuer, login).catch((error: Error) => {
      throw new Error(`${error.message}\nnavigations:\n${navigations.join('\n')}`);
    });
    await page.waitForLoadState('load').catch(() => {});
    pageText = await page
      .locator('body')
      .innerText()
      .catch(() => '');
  } finally {
    await context.close();
  }
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 8_000));
  let code = await Promise.race([exited, timeout]);
  if (code === 'timeout') {
    child.kill('SIGKILL');
    code = null;
  }
  const file = join(home, '.terraform.d', 'credentials.tfrc.json');
  const token = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as { credentials?: Record<string, { token?: string }> }).credentials?.[host]?.token
    : undefined;
  // eslint-disable-next-line no-control-regex
  return { code, output: output.replace(/\u001b\[[0-9;]*m/g, ''), token, pageText, reachedTerraform };
}

/**
 * `terraform init` (or `cli init`, e.g. tofu) in a fresh directory with these files; `cli.tfrc` (if given)
 * becomes a fresh HOME's ~/.terraformrc unless `homeEnv` is given.
 */
export async function terraformInit(
  world: SignInWorld,
  name: string,
  files: Record<string, string>,
  homeEnv?: NodeJS.ProcessEnv,
  cli = terraform!,
): Promise<{ ok: boolean; output: string }> {
  const work = join(world.dir, 'init', name);
  await mkdir(work, { recursive: true });
  for (const [file, text] of Object.entries(files)) await writeFile(join(work, file), text);
  const env: NodeJS.ProcessEnv = homeEnv ?? (await terraformHome(world, `init-${name}`, files['cli.tfrc'] ?? '')).env;
  try {
    const { stdout, stderr } = await run(cli, ['init', '-input=false', '-no-color'], {
      cwd: work,
      env: { ...env, TF_IN_AUTOMATION: '1' },
      timeout: 120_000,
    });
    return { ok: true, output: stdout + stderr };
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${stdout ?? ''}${stderr ?? ''}` };
  }
}

/** A root module requiring the private provider. */
export const providerConfig = (hostname: string) =>
  `terraform {\n  required_providers {\n    thing = {\n      source  = "${hostname}/acme/thing"\n      version = "1.3.0"\n    }\n  }\n}\n`;

/** A root module calling the private module through MODULE_HOST (Terraform wants a dotted module host). */
export const moduleConfig = () => `module "vpc" {\n  source  = "${MODULE_HOST}/acme/vpc/aws"\n  version = "1.0.0"\n  name    = "main"\n}\n`;

/**
 * CLI configuration sending MODULE_HOST's services — login.v1 included — to the server: how a local registry
 * (docs/sign-in.md) is signed in to under a dotted name, so `terraform login MODULE_HOST` stores the token
 * for the same host the module source names.
 */
export const hostBlockWithLogin = (world: SignInWorld) => {
  const o = world.server.origin;
  return `host "${MODULE_HOST}" {\n  services = {\n    "modules.v1" = "${o}/v1/modules/"\n    "login.v1" = {\n      client      = "terraform-cli"\n      grant_types = ["authz_code"]\n      authz       = "${o}/oauth/authorization"\n      token       = "${o}/oauth/token"\n      ports       = [10000, 10010]\n    }\n  }\n}\n`;
};

/** CLI configuration pointing MODULE_HOST's modules.v1 at the server, with a token for it. */
export const moduleCliConfig = (world: SignInWorld, token: string) =>
  `host "${MODULE_HOST}" {\n  services = {\n    "modules.v1" = "${world.server.origin}/v1/modules/"\n  }\n}\ncredentials "${MODULE_HOST}" {\n  token = "${token}"\n}\n`;
