import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerConfig, ready, startWorld, terraformInit, terraformLogin, type SignInWorld } from './harness';
import { missing } from '../../tools';

/**
 * A public client (no OIDC_CLIENT_SECRET: PKCE only), as `npm run idp`
 * registers the registry for the README's local example: terraform login,
 * then a private terraform init with the stored token.
 */
let world: SignInWorld;

beforeAll(async () => {
  if (ready) world = await startWorld({ publicClient: true });
}, 240_000);
afterAll(async () => world?.stop());

describe.skipIf(missing('chromium and terraform', ready))('sign-in with a public OIDC client', () => {
  it('terraform login and init work without a client secret', async () => {
    const login = await terraformLogin(world, 'public', 'alice');
    expect(login.code, login.output).toBe(0);
    const init = await terraformInit(
      world,
      'public-provider',
      { 'main.tf': providerConfig(world.hostname) },
      {
        PATH: process.env.PATH,
        HOME: `${world.dir}/homes/public`,
        SSL_CERT_FILE: world.certificate.certPath,
        CHECKPOINT_DISABLE: '1',
      },
    );
    expect(init.ok, init.output).toBe(true);
    expect(init.output).toContain(`Installed ${world.hostname}/acme/thing v1.3.0`);
  });
});
