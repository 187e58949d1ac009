import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { get } from '../http';
import { MODULE_HOST } from './harness';
import {
  hostBlockWithLogin,
  moduleCliConfig,
  moduleConfig,
  providerConfig,
  ready,
  signInAtProvider,
  startWorld,
  terraformInit,
  terraformLogin,
  type SignInWorld,
} from './harness';
import { missing } from '../../tools';
import { ensureTofu } from '../tofu/tofu';

/**
 * `terraform login localhost:PORT` end to end with a real OpenID Provider:
 * Terraform's own listener, chromium through the provider's sign-in, the
 * token in Terraform's credentials file, then a private `terraform init` of
 * a provider and a module with it. A person the policy grants nothing gets
 * no token and a page saying so. Then the pages in chromium: SSO sign-in,
 * the Tokens page (create, use with terraform init, revoke → refused),
 * admin offboarding, sign-out. One registry and provider for the file.
 */
let world: SignInWorld;

beforeAll(async () => {
  if (ready) world = await startWorld();
}, 240_000);
afterAll(async () => world?.stop());

describe.skipIf(missing('chromium and terraform', ready))("terraform login with the organisation's identity provider", () => {
  it('discovery advertises login.v1', async () => {
    const response = await get(`${world.server.origin}/.well-known/terraform.json`, { ca: world.certificate.pem });
    expect(JSON.parse(response.body.toString())['login.v1']).toEqual({
      client: 'terraform-cli',
      grant_types: ['authz_code'],
      authz: '/oauth/authorization',
      token: '/oauth/token',
      ports: [10000, 10010],
    });
  });

  it('alice (group platform) logs in; the stored token installs the private provider and module', async () => {
    const login = await terraformLogin(world, 'alice', 'alice');
    expect(login.code, `${login.output}\n--- page ---\n${login.pageText}\n--- server ---\n${world.server.log().slice(-3000)}`).toBe(0);
    expect(login.output).toContain('Success! Terraform has obtained and saved an API token.');
    expect(login.token).toMatch(/^ert_[A-Za-z0-9_-]{43}$/);
    expect(login.reachedTerraform).toBe(true);
    // Terraform's one-shot listener shows its page, unless it closed first (a loaded machine: an empty response).
    if (!/ERR_EMPTY_RESPONSE|ERR_CONNECTION_(REFUSED|RESET|CLOSED)/.test(login.pageText)) {
      expect(login.pageText).toContain('The login server has returned an authentication code to Terraform.');
    }

    const provider = await terraformInit(world, 'alice-provider', { 'main.tf': providerConfig(world.hostname) }, undefined);
    // Without the credentials Terraform saved, the same init is refused: the token is what let it in.
    expect(provider.ok).toBe(false);
    const withLogin = await terraformInit(world, 'alice-provider-login', { 'main.tf': providerConfig(world.hostname) }, loginEnv(world, 'alice'));
    expect(withLogin.ok, withLogin.output).toBe(true);
    expect(withLogin.output).toContain(`Installed ${world.hostname}/acme/thing v1.3.0`);

    const module = await terraformInit(world, 'alice-module', { 'main.tf': moduleConfig(), 'cli.tfrc': moduleCliConfig(world, login.token!) });
    expect(module.ok, module.output).toBe(true);
    expect(module.output).toMatch(/Downloading registry\.example\.com\/acme\/vpc\/aws 1\.0\.0/);
  });

  it('terraform login through a CLI host block (a dotted name for a local registry): the stored token installs the module', async () => {
    const login = await terraformLogin(world, 'alice-host-block', 'alice', MODULE_HOST, hostBlockWithLogin(world));
    expect(login.code, login.output).toBe(0);
    expect(login.token).toMatch(/^ert_/);
    const module = await terraformInit(world, 'alice-host-block-module', { 'main.tf': moduleConfig() }, loginEnv(world, 'alice-host-block'));
    expect(module.ok, module.output).toBe(true);
    expect(module.output).toMatch(/Downloading registry\.example\.com\/acme\/vpc\/aws 1\.0\.0/);
  });

  it('tofu login (OpenTofu 1.6.2, the same login.v1): the token it stored installs the private provider with tofu init', async () => {
    const tofu = await ensureTofu();
    const login = await terraformLogin(world, 'alice-tofu', 'alice', world.hostname, '', tofu);
    expect(login.code, `${login.output}\n--- page ---\n${login.pageText}`).toBe(0);
    expect(login.output).toContain('Success! OpenTofu has obtained and saved an API token.');
    expect(login.token).toMatch(/^ert_[A-Za-z0-9_-]{43}$/);
    expect(login.reachedTerraform).toBe(true);
    // Run at once: with the HOME tofu login wrote to, and with a fresh one (refused: the token is what let it in).
    const files = { 'main.tf': providerConfig(world.hostname) };
    const [init, without] = await Promise.all([
      terraformInit(world, 'alice-tofu-init', files, loginEnv(world, 'alice-tofu'), tofu),
      terraformInit(world, 'alice-tofu-none', files, undefined, tofu),
    ]);
    expect(init.ok, init.output).toBe(true);
    expect(init.output).toContain(`Installed ${world.hostname}/acme/thing v1.3.0`);
    expect(without.ok).toBe(false);
  });

  it('a person the policy grants nothing (unverified company email, no group) gets no token and a page saying so', async () => {
    const login = await terraformLogin(world, 'mallory', 'mallory');
    expect(login.token).toBeUndefined();
    expect(login.code).not.toBe(0);
    expect(login.pageText).toContain("the registry's policy grants this account no access");
  });
});

describe.skipIf(missing('chromium and terraform', ready))('the pages with single sign-on (chromium)', () => {
  const versions = (token: string) =>
    get(`${world.server.origin}/v1/providers/acme/thing/versions`, { ca: world.certificate.pem, headers: { authorization: `Bearer ${token}` } });

  async function signIn(login: string): Promise<Page> {
    const context = await world.browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    await page.goto(`${world.server.origin}/tokens`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.click('text=Sign in with SSO');
    await signInAtProvider(page, world.idp.issuer, login);
    await page.waitForLoadState('load');
    expect(new URL(page.url()).pathname).toBe('/tokens');
    return page;
  }

  it('a person signs in with SSO, creates a token, uses it with terraform init, revokes it: refused on the next request', async () => {
    const page = await signIn('alice');
    expect(await page.locator('header').innerText()).toContain('Signed in as alice@acme.com');
    // Her scopes come from a group (LOGIN_POLICY rule on groups): the page session lasts 1 hour, not 12.
    const session = (await page.context().cookies()).find((c) => c.name === '__Host-session');
    expect(session!.expires - Date.now() / 1000).toBeLessThanOrEqual(3600 + 5);
    expect(session!.expires - Date.now() / 1000).toBeGreaterThan(3000);
    await page.fill('#name', 'ci-network');
    await page.fill('#days', '3');
    await page.click('button:has-text("Create token")');
    await page.waitForLoadState('load');
    const token = (await page.locator('#new-token').innerText()).trim();
    expect(token).toMatch(/^ert_[A-Za-z0-9_-]{43}$/);
    expect(await page.locator('#new-token-credentials').innerText()).toContain(`credentials "${world.hostname}" {\n  token = "${token}"\n}`);
    // localhost:PORT has a port, which TF_TOKEN_… variables cannot name: the page says to use the block (the unit test checks the variable).
    expect(await page.locator('[role="status"]').innerText()).toContain('TF_TOKEN_… variables only for hostnames without a port');

    const init = await terraformInit(world, 'tokens-page', {
      'main.tf': providerConfig(world.hostname),
      'cli.tfrc': `credentials "${world.hostname}" {\n  token = "${token}"\n}\n`,
    });
    expect(init.ok, init.output).toBe(true);
    expect(init.output).toContain(`Installed ${world.hostname}/acme/thing v1.3.0`);

    // Shown once: the list has its id, never the token again.
    await page.goto(`${world.server.origin}/tokens`);
    const listed = await page.locator('section[aria-labelledby="yours"]').innerText();
    expect(listed).toContain('ci-network');
    expect(await page.content()).not.toContain(token);

    expect((await versions(token)).status).toBe(200);
    const row = page.locator('tr', { hasText: 'ci-network' });
    await row.locator('button:has-text("Revoke")').click();
    await page.waitForLoadState('load');
    expect(await page.locator('[role="status"]').innerText()).toContain('is revoked');
    expect((await versions(token)).status).toBe(401);
    await page.context().close();
  });

  it("scopes beyond the person's own and cross-site posts are refused", async () => {
    const page = await signIn('alice');
    const cookies = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const post = (origin: string, body: string) =>
      fetchWithCa(`${world.server.origin}/tokens`, {
        method: 'POST',
        headers: { origin, cookie: cookies, 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
    const foreign = await post('https://evil.example', 'name=x&scope=acme&days=1');
    expect(foreign.status).toBe(403);
    const wider = await post(world.server.origin, 'name=x&scope=*&days=1');
    expect(wider.status).toBe(400);
    expect(wider.body).toContain('You cannot grant scopes you do not have: *');
    const longer = await post(world.server.origin, 'name=x&scope=acme&days=8');
    expect(longer.status).toBe(400);
    await page.context().close();
  });

  it("an admin sees everyone's tokens and revokes all of a person's at once; sign-out ends the session", async () => {
    const alice = await terraformLogin(world, 'alice-offboard', 'alice');
    expect(alice.token).toBeDefined();
    expect((await versions(alice.token!)).status).toBe(200);
    const page = await signIn('carol');
    const everyone = await page.locator('section[aria-labelledby="all-tokens"]').innerText();
    expect(everyone).toContain('alice@acme.com');
    await page.selectOption('#person', { label: `alice@acme.com (${world.idp.issuer})` });
    await page.click('button:has-text("Revoke all")');
    await page.waitForLoadState('load');
    expect(await page.locator('[role="status"]').innerText()).toMatch(/Revoked \d+ token\(s\)/);
    expect((await versions(alice.token!)).status).toBe(401);

    await page.click('button:has-text("Sign out")');
    await page.waitForLoadState('load');
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.goto(`${world.server.origin}/tokens`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.context().close();
  });
});

/** A request trusting the test certificate; returns status and text. */
async function fetchWithCa(url: string, init: { method: string; headers: Record<string, string>; body: string }): Promise<{ status: number; body: string }> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method, headers: init.headers, ca: world.certificate.pem, family: 4 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

function loginEnv(world: SignInWorld, name: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: `${world.dir}/homes/${name}`, SSL_CERT_FILE: world.certificate.certPath, CHECKPOINT_DISABLE: '1' };
}
