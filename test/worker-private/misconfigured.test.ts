import { beforeAll, describe, expect, it } from 'vitest';
import type { Env } from '../../src/env';
import { address, fakeRelease, getWith, issueToken, ORIGIN, seed } from './helpers';
import { oidcEnv } from './identity/helpers';

/**
 * A misconfigured registry says so: a setting src/config.ts cannot run with
 * is answered with 503 naming the setting and the fix — never its value — on
 * the routes that need it, while the routes that do not keep serving
 * (before: every request, discovery included, answered 500 "internal error").
 */

const SHORT_SECRET = 'short-secret-0123456789'; // 23 characters: under the 32 required
let token: string;

beforeAll(async () => {
  await seed([fakeRelease(address('acme', 'thing'), '1.0.0', ['linux_amd64'])]);
  ({ token } = await issueToken(['acme']));
});

const auth = () => ({ headers: { authorization: `Bearer ${token}` } });

async function expectMisconfigured(response: Response, setting: string, value?: string): Promise<string> {
  expect(response.status).toBe(503);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const text = await response.text();
  const message = (JSON.parse(text) as { errors: string[] }).errors[0]!;
  expect(message).toMatch(new RegExp(`^the registry is misconfigured: ${setting} `));
  if (value) expect(text).not.toContain(value);
  return message;
}

describe('URL_SIGNING_SECRET shorter than 32 characters (private mode)', () => {
  const bad = { URL_SIGNING_SECRET: SHORT_SECRET } as Partial<Env>;

  it('discovery and the version list (no signing) keep serving', async () => {
    expect((await getWith(bad, '/.well-known/terraform.json')).status).toBe(200);
    expect((await getWith(bad, '/v1/providers/acme/thing/versions', auth())).status).toBe(200);
    expect((await getWith(bad, '/login')).status).toBe(200);
  });

  it('routes that sign or verify with it answer 503 naming it and the fix, never its value, and nothing unsigned', async () => {
    const download = await getWith(bad, '/v1/providers/acme/thing/1.0.0/download/linux/amd64', auth());
    const message = await expectMisconfigured(download, 'URL_SIGNING_SECRET', SHORT_SECRET);
    expect(message).toContain('at least 32 are required: generate one with `openssl rand -base64 32`');
    const signIn = await getWith(bad, '/login', {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, next: '/' }).toString(),
    });
    await expectMisconfigured(signIn, 'URL_SIGNING_SECRET', SHORT_SECRET);
    expect(signIn.headers.get('set-cookie')).toBeNull();
    const archive = await getWith(
      bad,
      `/v1/archives/registry.example.com/acme/thing/1.0.0/terraform-provider-thing_1.0.0_linux_amd64.zip?expires=9999999999&signature=${'A'.repeat(43)}`,
    );
    await expectMisconfigured(archive, 'URL_SIGNING_SECRET', SHORT_SECRET);
  });
});

describe('REGISTRY_HOSTNAME that is not a hostname', () => {
  const bad = { REGISTRY_HOSTNAME: 'not a hostname' } as Partial<Env>;

  it('discovery keeps serving; the registry routes answer 503 naming REGISTRY_HOSTNAME', async () => {
    expect((await getWith(bad, '/.well-known/terraform.json')).status).toBe(200);
    await expectMisconfigured(await getWith(bad, '/v1/providers/acme/thing/versions', auth()), 'REGISTRY_HOSTNAME in wrangler.toml:');
  });
});

describe('a LOGIN_POLICY that does not parse', () => {
  const bad = oidcEnv({ LOGIN_POLICY: '{"rules":[{"if":{"__proto__":"x"},"scopes":["*"]}]}' });

  it('sign-in answers 503 naming LOGIN_POLICY; discovery and reads with a token keep serving', async () => {
    const overrides = { ...bad } as Partial<Env>;
    expect((await getWith(overrides, '/.well-known/terraform.json')).status).toBe(200);
    expect((await getWith(overrides, '/v1/providers/acme/thing/versions', auth())).status).toBe(200);
    const login = await getWith(overrides, '/login/sso?next=/');
    expect(login.status).toBe(503);
    expect(await login.text()).toContain('LOGIN_POLICY.rules[0].if: &quot;__proto__&quot; cannot be a claim name');
  });
});
