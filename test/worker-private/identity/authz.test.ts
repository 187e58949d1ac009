import { describe, expect, it } from 'vitest';
import { flowCookie } from '../../../src/access/flow';
import { isCliRedirectUri, parseCliAuthzRequest } from '../../../src/access/login-v1';
import { getWith } from '../helpers';
import { lastByteFlipped, oidcEnv, pkce } from './helpers';

// login.v1 authz: Terraform's request is checked before anything else happens; a refused one gets a 400 page,
// never a redirect (an unchecked redirect_uri must receive nothing) and no cookie. The callback finds its flow
// only through a sealed cookie named after the provider state it sent.

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const valid = {
  response_type: 'code',
  client_id: 'terraform-cli',
  redirect_uri: 'http://localhost:10000/login',
  state: 'a5d6f1c2-terraform-state',
  code_challenge: CHALLENGE,
  code_challenge_method: 'S256',
};
const query = (params: Record<string, string | undefined>) =>
  new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined)).toString();

describe("redirect_uri: only Terraform's loopback listener within the advertised ports", () => {
  it('accepts localhost and 127.0.0.1 on ports 10000..10010', () => {
    for (const uri of ['http://localhost:10000/login', 'http://127.0.0.1:10010/login', 'http://localhost:10005/login'])
      expect(isCliRedirectUri(uri), uri).toBe(true);
  });
  const refused = [
    'https://localhost:10000/login',
    'http://localhost:9999/login',
    'http://localhost:10011/login',
    'http://localhost:010000/login',
    'http://localhost/login',
    'http://localhost:10000/',
    'http://localhost:10000/login/',
    'http://localhost:10000/login?x=1',
    'http://localhost:10000/login#f',
    'http://localhost:10000@evil.example/login',
    'http://evil.example@localhost:10000/login',
    'http://localhost.evil.example:10000/login',
    'http://127.0.0.2:10000/login',
    'http://[::1]:10000/login',
    'http://LOCALHOST:10000/login',
    'http://evil.example/login',
    '//evil.example/login',
    'javascript:alert(1)',
    'http://localhost:10000/login\n',
    ' http://localhost:10000/login',
    'http://localhost:10000/%2e%2e/login',
    'http://localhost:10000\\@evil.example/login',
  ];
  for (const uri of refused) it(`refuses ${JSON.stringify(uri)}`, () => expect(isCliRedirectUri(uri)).toBe(false));
});

describe('GET /oauth/authorization refuses with a 400 page, no redirect and no cookie', () => {
  const cases: [string, Record<string, string | undefined>, RegExp][] = [
    ['no PKCE at all', { ...valid, code_challenge: undefined, code_challenge_method: undefined }, /PKCE is required/],
    ['plain PKCE', { ...valid, code_challenge_method: 'plain', code_challenge: 'a'.repeat(43) }, /plain is refused/],
    ['a challenge method other than S256', { ...valid, code_challenge_method: 'S512' }, /S256/],
    ['S256 without a challenge', { ...valid, code_challenge: undefined }, /code_challenge must be/],
    ['a challenge of the wrong length', { ...valid, code_challenge: CHALLENGE.slice(1) }, /code_challenge must be/],
    ['no state', { ...valid, state: undefined }, /state is required/],
    ['another client', { ...valid, client_id: 'someone-else' }, /client_id must be &quot;terraform-cli&quot;/],
    ['the implicit flow', { ...valid, response_type: 'token' }, /response_type must be &quot;code&quot;/],
    ['a redirect_uri off loopback (open redirect)', { ...valid, redirect_uri: 'https://evil.example/login' }, /redirect_uri must be/],
    ['a redirect_uri outside the port range', { ...valid, redirect_uri: 'http://localhost:8080/login' }, /redirect_uri must be/],
    ['a redirect_uri with user info pointing elsewhere', { ...valid, redirect_uri: 'http://localhost:10000@evil.example/login' }, /redirect_uri must be/],
    ['no redirect_uri', { ...valid, redirect_uri: undefined }, /redirect_uri must be/],
  ];
  for (const [what, params, message] of cases) {
    it(what, async () => {
      const response = await getWith(oidcEnv(), `/oauth/authorization?${query(params)}`, { redirect: 'manual' });
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('set-cookie')).toBeNull();
      expect(await response.text()).toMatch(message);
    });
  }

  it('a parameter given twice (which one would count?)', async () => {
    const response = await getWith(oidcEnv(), `/oauth/authorization?${query(valid)}&redirect_uri=${encodeURIComponent('https://evil.example/login')}`, {
      redirect: 'manual',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(parseCliAuthzRequest(new URLSearchParams(`${query(valid)}&state=other`))).toEqual({ error: 'state is given more than once' });
  });

  it('a valid request while the identity provider is down: 502 page, no cookie, nothing stored', async () => {
    const errors: string[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => errors.push(args.join(' '));
    try {
      const response = await getWith(oidcEnv(), `/oauth/authorization?${query(valid)}`, { redirect: 'manual' });
      expect(response.status).toBe(502);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('set-cookie')).toBeNull();
      expect(await response.text()).toContain('could not be reached');
    } finally {
      console.error = original;
    }
    expect(errors.join('\n')).toContain('discovery');
  });
});

describe('GET /oauth/callback refuses a state this browser did not start', () => {
  const env = oidcEnv();
  const flow = async (state: string, expiresAt = Date.now() + 60_000) =>
    (
      await flowCookie(env, {
        kind: 'cli',
        cli: { redirectUri: valid.redirect_uri, state: valid.state, codeChallenge: (await pkce()).challenge },
        provider: { state, nonce: 'n'.repeat(43), codeVerifier: 'v'.repeat(43) },
        expiresAt,
      })
    ).split(';')[0]!;
  const callback = (state: string, cookie?: string) =>
    getWith(env, `/oauth/callback?code=provider-code&state=${encodeURIComponent(state)}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });

  async function expectRefused(response: Response): Promise<void> {
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('does not match one this browser started');
  }

  it('no flow cookie at all (a forged or replayed callback)', async () => expectRefused(await callback('state-a')));
  it('a flow cookie for another state (state mismatch)', async () => {
    const cookie = await flow('state-a');
    await expectRefused(
      await callback(
        'state-b',
        cookie.replace(/^[^=]+/, (name) => name),
      ),
    );
  });
  it("the flow cookie copied under the other state's name", async () => {
    const a = await flow('state-a');
    const b = await flow('state-b');
    const swapped = `${b.split('=')[0]}=${a.slice(a.indexOf('=') + 1)}`;
    await expectRefused(await callback('state-b', swapped));
  });
  it('a flow cookie differing only in its last byte', async () => {
    const cookie = await flow('state-a');
    const [name, value] = [cookie.slice(0, cookie.indexOf('=')), cookie.slice(cookie.indexOf('=') + 1)];
    await expectRefused(await callback('state-a', `${name}=${lastByteFlipped(value)}`));
  });
  it('an expired flow', async () => expectRefused(await callback('state-a', await flow('state-a', Date.now() - 1))));
  it('the right flow goes on to the provider (down here: 502, and the flow cookie is cleared)', async () => {
    const errors = console.error;
    console.error = () => {};
    try {
      const response = await callback('state-a', await flow('state-a'));
      expect(response.status).toBe(502);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('set-cookie')).toMatch(/^__Host-login-[0-9a-f]{16}=; Path=\/; Max-Age=0/);
    } finally {
      console.error = errors;
    }
  });
});
