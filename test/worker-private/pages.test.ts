import { beforeAll, describe, expect, it } from 'vitest';
import { address, env, fakeRelease, get, issueToken, ORIGIN, seed } from './helpers';
import { readSession, SESSION_COOKIE, signIn } from '../../src/access/session';
import { tokenKey } from '../../src/store/layout';
import { deleteTokenRecord } from '../../src/store/tokens/write';
import { moduleAddress } from '../../src/protocol/modules-v1';
import { seedModule } from '../fixtures/modules';

// Pages in private mode: a session from a read token, its scope, CSRF-safe sign-in and sign-out.
const acme = address('acme', 'thing');
const other = address('other', 'secret');

beforeAll(async () => {
  await seed([fakeRelease(acme, '1.0.0'), fakeRelease(other, '1.0.0')]);
  await seedModule(env.REGISTRY_KV, env.REGISTRY_R2, moduleAddress(env.REGISTRY_HOSTNAME, 'acme', 'net', 'aws'), '1.0.0');
});

const form = (fields: Record<string, string>, origin: string | null = ORIGIN): RequestInit => ({
  method: 'POST',
  redirect: 'manual',
  headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', ...(origin ? { origin } : {}) },
  body: new URLSearchParams(fields).toString(),
});

async function signedIn(scopes: string[]): Promise<{ cookie: string; token: string; sha256: string }> {
  const { token, record } = await issueToken(scopes, { name: 'alice' });
  const response = await get('/login', form({ token, next: '/providers/acme/thing' }));
  expect(response.status).toBe(303);
  expect(response.headers.get('location')).toBe('/providers/acme/thing');
  const setCookie = response.headers.get('set-cookie')!;
  return { cookie: setCookie.split(';')[0]!, token, sha256: record.sha256 };
}

const withCookie = (cookie: string): RequestInit => ({ headers: { accept: 'text/html', cookie }, redirect: 'manual' });

describe('not signed in', () => {
  it('redirects every page to /login with where it was going, never a page body', async () => {
    for (const path of [
      '/',
      '/providers/acme/thing',
      '/providers/acme/thing/1.0.0',
      '/providers/acme/thing/1.0.0/docs',
      '/mirror/registry.example.com/acme/thing',
      '/providers/acme/thing/1.0.0/signing-key.asc',
    ]) {
      const response = await get(path, { headers: { accept: 'text/html' }, redirect: 'manual' });
      expect(response.status, path).toBe(303);
      expect(response.headers.get('location')).toBe(`/login?next=${encodeURIComponent(path)}`);
      expect(await response.text()).toBe('');
    }
  });

  it('shows the sign-in form; assets stay public', async () => {
    const response = await get('/login?next=/providers/acme/thing', { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    const body = await response.text();
    expect(body).toContain('<form method="post" action="/login">');
    expect(body).toContain('type="password"');
    expect(body).toContain('value="/providers/acme/thing"');
    expect((await get('/assets/app.css')).status).toBe(200);
  });
});

describe('POST /login', () => {
  it('sets an HttpOnly, Secure, SameSite __Host- cookie holding no token, signed and expiring', async () => {
    const { token } = await issueToken(['acme']);
    const response = await get('/login', form({ token, next: '/' }));
    expect(response.status).toBe(303);
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(new RegExp(`^${SESSION_COOKIE}=[0-9a-f]{64}\\.[0-9]+\\.[A-Za-z0-9_-]{43}; Path=/; Max-Age=43200; HttpOnly; Secure; SameSite=Lax$`));
    expect(cookie).not.toContain(token);
  });

  it('refuses a wrong, unknown or empty token with 401 and the form again', async () => {
    for (const token of ['', 'nope', `ert_${'A'.repeat(43)}`]) {
      const response = await get('/login', form({ token, next: '/' }));
      expect(response.status, token).toBe(401);
      expect(response.headers.get('set-cookie')).toBeNull();
      expect(await response.text()).toContain('Not signed in');
    }
  });

  it('refuses a post from another site or without Origin (CSRF)', async () => {
    const { token } = await issueToken(['acme']);
    for (const origin of ['https://evil.example', null]) {
      const response = await get('/login', form({ token, next: '/' }, origin));
      expect(response.status).toBe(403);
      expect(response.headers.get('set-cookie')).toBeNull();
    }
  });

  it('only follows a next that is a path on this site', async () => {
    const { token } = await issueToken(['acme']);
    for (const next of ['https://evil.example/', '//evil.example/', '/\\evil.example']) {
      const response = await get('/login', form({ token, next }));
      expect(response.headers.get('location'), next).toBe('/');
    }
  });
});

describe('a session', () => {
  it('sees only the namespaces of its token, private and uncached, with a credentials snippet without the token', async () => {
    const { cookie, token } = await signedIn(['acme']);
    const home = await get('/', withCookie(cookie));
    expect(home.status).toBe(200);
    expect(home.headers.get('cache-control')).toBe('private, no-store');
    const body = await home.text();
    expect(body).toContain('acme/thing');
    expect(body).not.toContain('other/secret');
    expect(body).toContain('Signed in as alice');
    const page = await (await get('/providers/acme/thing', withCookie(cookie))).text();
    expect(page).toContain('credentials &quot;registry.example.com&quot; {\n  token = &quot;ert_…&quot;\n}');
    expect(page).not.toContain(token);
    // Browsed at a host Terraform can't use as is: the registry's name (host block) and the mirror's host:port, which
    // Terraform keys the network mirror's credentials by (proven with real terraform in test/e2e/pages-browser.test.ts).
    const local = (await (await get('https://localhost:8443/providers/acme/thing', withCookie(cookie))).text()).replace(/&quot;/g, '"');
    expect(local).toContain(
      'credentials "registry.example.com" {\n  token = "ert_…"\n}\n# the network mirror at https://localhost:8443/v1/mirror/\ncredentials "localhost:8443" {\n  token = "ert_…"\n}\n',
    );
    const modulePage = (await (await get('https://localhost:8443/modules/acme/net/aws', withCookie(cookie))).text()).replace(/&quot;/g, '"');
    expect(modulePage).toContain('source  = "registry.example.com/acme/net/aws"');
    expect(modulePage).toContain('credentials "registry.example.com" {\n  token = "ert_…"\n}\n</pre>');
    const hidden = await get('/providers/other/secret', withCookie(cookie));
    expect(hidden.status).toBe(404);
  });

  it('says so when its token can read none of the providers', async () => {
    const { token } = await issueToken(['nobody']);
    const response = await get('/login', form({ token, next: '/' }));
    const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
    const body = await (await get('/', withCookie(cookie))).text();
    expect(body).toContain('Your token can read none of the providers here');
    expect(body).not.toContain('acme/thing');
  });

  it('ends at once when its token is revoked', async () => {
    const { cookie, sha256 } = await signedIn(['acme']);
    expect((await get('/', withCookie(cookie))).status).toBe(200);
    await deleteTokenRecord(env.REGISTRY_KV, sha256);
    const response = await get('/', withCookie(cookie));
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/login?next=%2F');
  });

  it('is refused when the cookie is altered or has expired', async () => {
    const { cookie } = await signedIn(['*']);
    const [name, value] = cookie.split('=') as [string, string];
    const [hash, expires, mac] = value.split('.') as [string, string, string];
    const altered = [
      `${name}=${hash}.${Number(expires) + 3600}.${mac}`,
      `${name}=${hash}.${expires}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`,
      `${name}=${'0'.repeat(64)}.${expires}.${mac}`,
      `${name}=garbage`,
    ];
    for (const bad of altered) expect((await get('/', withCookie(bad))).status, bad).toBe(303);
    const request = new Request(`${ORIGIN}/`, { headers: { cookie } });
    expect(await readSession(request, env)).not.toBeNull();
    expect(await readSession(request, env, Date.now() + 13 * 3600 * 1000)).toBeNull();
  });

  it('ends when its token record is rewritten with an expiry that has passed (re-read on every request)', async () => {
    const { cookie, sha256 } = await signedIn(['acme']);
    expect((await get('/', withCookie(cookie))).status).toBe(200);
    const record = JSON.parse((await env.REGISTRY_KV.get(tokenKey(sha256), 'text'))!) as Record<string, unknown>;
    await env.REGISTRY_KV.put(tokenKey(sha256), JSON.stringify({ ...record, expires: new Date(Date.now() - 1000).toISOString() }));
    expect((await get('/', withCookie(cookie))).status).toBe(303);
  });

  it('is refused when the record under its token hash names another hash (as bearer tokens are)', async () => {
    const { cookie, sha256 } = await signedIn(['acme']);
    const { record: other } = await issueToken(['*']);
    await env.REGISTRY_KV.put(tokenKey(sha256), JSON.stringify(other));
    expect((await get('/', withCookie(cookie))).status).toBe(303);
  });

  it('never outlives its token', async () => {
    const { token } = await issueToken(['acme'], { expires: new Date(Date.now() + 60_000).toISOString() });
    const outcome = await signIn(token, env);
    expect('cookie' in outcome && /Max-Age=(\d+)/.exec(outcome.cookie)![1]).toMatch(/^(59|60)$/);
  });

  it('signs out with a same-origin POST /logout, which clears the cookie', async () => {
    const { cookie } = await signedIn(['acme']);
    const foreign = await get('/logout', { ...form({}, 'https://evil.example'), headers: { cookie, origin: 'https://evil.example' } });
    expect(foreign.status).toBe(403);
    const response = await get('/logout', { method: 'POST', redirect: 'manual', headers: { cookie, origin: ORIGIN } });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/login');
    expect(response.headers.get('set-cookie')).toMatch(new RegExp(`^${SESSION_COOKIE}=; Path=/; Max-Age=0`));
    expect((await get('/logout')).status).toBe(405);
  });

  it('signing out ends the session on the server: a copy of the cookie taken before is refused, the token itself still works', async () => {
    const { cookie, token } = await signedIn(['acme']);
    const copy = cookie; // e.g. lifted from the browser's profile
    const other = await signedIn(['acme']); // another session of another token: untouched
    expect((await get('/providers/acme/thing', withCookie(copy))).status).toBe(200);
    expect((await get('/logout', { method: 'POST', redirect: 'manual', headers: { cookie, origin: ORIGIN } })).status).toBe(303);
    const after = await get('/providers/acme/thing', withCookie(copy));
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toBe('/login?next=%2Fproviders%2Facme%2Fthing');
    expect((await get('/providers/acme/thing', withCookie(other.cookie))).status).toBe(200);
    // Signing out ends a session, not its read token: the API and a fresh sign-in keep working.
    expect((await get('/v1/providers/acme/thing/versions', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await get('/login', form({ token, next: '/' }))).status).toBe(303);
  });
});

describe('the API in private mode', () => {
  it('still takes bearer tokens, not the session cookie', async () => {
    const { cookie } = await signedIn(['acme']);
    const response = await get('/v1/providers/acme/thing/versions', { headers: { cookie } });
    expect(response.status).toBe(401);
  });
});
