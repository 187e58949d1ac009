import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get } from '../http';
import { moduleCliConfig, moduleConfig, providerConfig, ready, startWorld, terraformInit, terraformLogin, type SignInWorld } from './harness';

/**
 * `terraform login localhost:PORT` end to end with a real OpenID Provider:
 * Terraform's own listener, chromium through the provider's sign-in, the
 * token in Terraform's credentials file, then a private `terraform init` of
 * a provider and a module with it. A person the policy grants nothing gets
 * no token and a page saying so.
 */
let world: SignInWorld;

beforeAll(async () => {
  if (ready) world = await startWorld();
}, 240_000);
afterAll(async () => world?.stop());

describe.skipIf(!ready)('terraform login with the organisation\'s identity provider', () => {
  it('discovery advertises login.v1', async () => {
    const response = await get(`${world.server.origin}/.well-known/terraform.json`, { ca: world.certificate.pem });
    expect(JSON.parse(response.body.toString())['login.v1']).toEqual({
      client: 'terraform-cli', grant_types: ['authz_code'], authz: '/oauth/authorization', token: '/oauth/token', ports: [10000, 10010],
    });
  });

  it('alice (group platform) logs in; the stored token installs the private provider and module', async () => {
    const login = await terraformLogin(world, 'alice', 'alice');
    expect(login.code, `${login.output}\n--- page ---\n${login.pageText}\n--- server ---\n${world.server.log().slice(-3000)}`).toBe(0);
    expect(login.output).toContain('Success! Terraform has obtained and saved an API token.');
    expect(login.token).toMatch(/^ert_[A-Za-z0-9_-]{43}$/);
    expect(login.pageText).toContain('The login server has returned an authentication code to Terraform.');

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

  it('a person the policy grants nothing (unverified company email, no group) gets no token and a page saying so', async () => {
    const login = await terraformLogin(world, 'mallory', 'mallory');
    expect(login.token).toBeUndefined();
    expect(login.code).not.toBe(0);
    expect(login.pageText).toContain('the registry\'s policy grants this account no access');
  });
});

function loginEnv(world: SignInWorld, name: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: `${world.dir}/homes/${name}`, SSL_CERT_FILE: world.certificate.certPath, CHECKPOINT_DISABLE: '1' };
}
