import { describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../../src/access/session';
import { sealPersonSession, type PersonSession } from '../../../src/access/person-session';
import { issuePersonToken } from '../../../src/access/issue';
import { listPersonTokens, personKey } from '../../../src/store/identity/person-tokens';
import { env, getWith, issueToken, ORIGIN } from '../helpers';
import { oidcEnv } from './helpers';

// /tokens: only people signed in with SSO; a token within their own scopes and the policy's lifetime; revoking
// only one's own unless admin; every form same-origin only.

const config = oidcEnv();
const alice = { issuer: 'http://127.0.0.1:9', subject: 'alice', email: 'alice@acme.com' };
const bob = { issuer: 'http://127.0.0.1:9', subject: 'bob', email: 'bob@acme.com' };

async function cookieOf(person: typeof alice, options: Partial<PersonSession> = {}): Promise<string> {
  const value = await sealPersonSession(env, {
    person,
    scopes: ['acme'],
    admin: false,
    expires: Math.floor(Date.now() / 1000) + 600,
    issued: Math.floor(Date.now() / 1000) - 5,
    ...options,
  });
  return `${SESSION_COOKIE}=${value}`;
}

function post(path: string, cookie: string, fields: Record<string, string | string[]>, origin: string | null = ORIGIN): Promise<Response> {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) for (const v of [value].flat()) body.append(name, v);
  return getWith(config, path, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', ...(origin ? { origin } : {}) },
    body: body.toString(),
  });
}

describe('/tokens', () => {
  it('without a session: to /login; with a token (not SSO) session: 403 saying to use SSO', async () => {
    const none = await getWith(config, '/tokens', { redirect: 'manual' });
    expect(none.status).toBe(303);
    expect(none.headers.get('location')).toBe('/login?next=/tokens');
    const { token } = await issueToken(['acme']);
    const signIn = await getWith(config, '/login', {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, next: '/' }).toString(),
    });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const page = await getWith(config, '/tokens', { headers: { cookie } });
    expect(page.status).toBe(403);
    expect(await page.text()).toContain('Sign in with SSO');
  });

  it('the login page offers SSO when it is configured, and only then', async () => {
    expect(await (await getWith(config, '/login')).text()).toContain('Sign in with SSO');
    expect(await (await getWith({}, '/login')).text()).not.toContain('Sign in with SSO');
  });

  it("creates a token within the person's scopes, shown once, private and never cached", async () => {
    const response = await post('/tokens', await cookieOf(alice), { name: 'ci', scope: 'acme', days: '7' });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('private, no-store');
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await response.text();
    const token = /ert_[A-Za-z0-9_-]{43}/.exec(html)?.[0];
    expect(token).toBeDefined();
    expect(html).toContain(`credentials &quot;registry.example.com&quot; {`);
    expect(html).toContain(`TF_TOKEN_registry_example_com=${token}`);
    const listed = await listPersonTokens(env.REGISTRY_R2, personKey(alice));
    expect(listed.some((t) => t.name === 'ci' && t.scopes.join() === 'acme')).toBe(true);
    expect(await (await getWith(config, '/tokens', { headers: { cookie: await cookieOf(alice) } })).text()).not.toContain(token!);
  });

  const refusals: [string, Record<string, string | string[]>, RegExp][] = [
    ['a scope the person does not have', { name: 'x', scope: ['acme', '*'], days: '1' }, /scopes you do not have: \*/],
    ['no scope', { name: 'x', days: '1' }, /at least one scope/],
    ['longer than the policy allows', { name: 'x', scope: 'acme', days: '8' }, /from 1 to 7/],
    ['a fractional or negative lifetime', { name: 'x', scope: 'acme', days: '-1' }, /from 1 to 7/],
    ['no name', { name: '', scope: 'acme', days: '1' }, /1 to 100 printable/],
    ['a name with control characters', { name: 'a\u0007b', scope: 'acme', days: '1' }, /1 to 100 printable/],
  ];
  for (const [what, fields, message] of refusals) {
    it(`refuses ${what} (400, nothing created)`, async () => {
      const before = (await listPersonTokens(env.REGISTRY_R2, personKey(alice))).length;
      const response = await post('/tokens', await cookieOf(alice), fields);
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(message);
      expect((await listPersonTokens(env.REGISTRY_R2, personKey(alice))).length).toBe(before);
    });
  }

  it('refuses every form from another origin or without Origin (CSRF): 403, nothing changed', async () => {
    const { record } = await issuePersonToken(env.REGISTRY_KV, env.REGISTRY_R2, { person: alice, scopes: ['acme'], days: 1, name: 'keep' });
    for (const origin of ['https://evil.example', null]) {
      expect((await post('/tokens', await cookieOf(alice), { name: 'x', scope: 'acme', days: '1' }, origin)).status).toBe(403);
      expect((await post('/tokens/revoke', await cookieOf(alice), { id: record.id }, origin)).status).toBe(403);
      expect((await post('/tokens/revoke-person', await cookieOf(alice, { admin: true }), { person: personKey(alice) }, origin)).status).toBe(403);
    }
    expect((await listPersonTokens(env.REGISTRY_R2, personKey(alice))).some((t) => t.id === record.id)).toBe(true);
  });

  it("a person revokes only their own tokens; an admin anyone's, and all of a person's at once", async () => {
    const { token, record } = await issuePersonToken(env.REGISTRY_KV, env.REGISTRY_R2, { person: bob, scopes: ['acme'], days: 1, name: 'bob-ci' });
    const refused = await post('/tokens/revoke', await cookieOf(alice), { id: record.id });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain(`No token ${record.id} that you may revoke`);
    const auth = { headers: { authorization: `Bearer ${token}` } };
    expect((await getWith(config, '/v1/providers/acme/thing/versions', auth)).status).not.toBe(401);
    expect((await post('/tokens/revoke-person', await cookieOf(alice), { person: personKey(bob) })).status).toBe(403);

    const second = await issuePersonToken(env.REGISTRY_KV, env.REGISTRY_R2, { person: bob, scopes: ['acme'], days: 1, name: 'bob-laptop' });
    const admin = await cookieOf(alice, { admin: true });
    const everyone = await (await getWith(config, '/tokens', { headers: { cookie: admin } })).text();
    expect(everyone).toContain('bob@acme.com');
    const offboarded = await post('/tokens/revoke-person', admin, { person: personKey(bob) });
    expect(offboarded.status).toBe(200);
    expect(await offboarded.text()).toMatch(/Revoked [2-9] token/);
    for (const t of [token, second.token]) {
      expect((await getWith(config, '/v1/providers/acme/thing/versions', { headers: { authorization: `Bearer ${t}` } })).status).toBe(401);
    }
    expect(await listPersonTokens(env.REGISTRY_R2, personKey(bob))).toEqual([]);
    // Their page session from before the offboarding ends too (they could otherwise mint a new token).
    const before = await getWith(config, '/tokens', { redirect: 'manual', headers: { cookie: await cookieOf(bob) } });
    expect(before.status).toBe(303);
    expect(before.headers.get('location')).toBe('/login?next=/tokens');
    expect((await post('/tokens', await cookieOf(bob), { name: 'x', scope: 'acme', days: '1' })).status).toBe(303);
    // A sign-in after it (the provider still lets them in) is a new session.
    const later = await cookieOf(bob, { issued: Math.floor(Date.now() / 1000) + 2 });
    expect((await getWith(config, '/tokens', { headers: { cookie: later } })).status).toBe(200);
  });

  it("signing out ends a person's session on the server: a copy of the cookie is refused, another session of theirs is not", async () => {
    const cookie = await cookieOf(alice);
    const laptop = await cookieOf(alice, { expires: Math.floor(Date.now() / 1000) + 601 });
    expect((await getWith(config, '/tokens', { headers: { cookie } })).status).toBe(200);
    const out = await getWith(config, '/logout', { method: 'POST', redirect: 'manual', headers: { cookie, origin: ORIGIN } });
    expect(out.status).toBe(303);
    const copy = await getWith(config, '/tokens', { redirect: 'manual', headers: { cookie } });
    expect(copy.status).toBe(303);
    expect(copy.headers.get('location')).toBe('/login?next=/tokens');
    // A copy cannot mint a token either.
    expect((await post('/tokens', cookie, { name: 'x', scope: 'acme', days: '1' })).status).toBe(303);
    expect((await getWith(config, '/tokens', { headers: { cookie: laptop } })).status).toBe(200);
  });
});
