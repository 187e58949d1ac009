import { beforeAll, describe, expect, it } from 'vitest';
import { signatureQuery } from '../../src/access/signed-urls';
import { readSession, SESSION_COOKIE, signIn } from '../../src/access/session';
import { tokenSha256 } from '../../src/access/tokens';
import { sealPersonSession } from '../../src/access/person-session';
import { tokenKey } from '../../src/store/layout';
import { address, bearer, env, fakeRelease, get, issueToken, seed } from './helpers';
import { lastByteFlipped, lastHexFlipped } from './identity/helpers';
import { settings } from '../../src/config';

// Every MAC and hash comparison the registry makes, with a value that differs from the right one only in its
// LAST bytes: a check that compared only a prefix (or stopped early) would accept these. The one-time login codes,
// PKCE verifiers, ID-token signatures and nonces are covered the same way in identity/token-endpoint.test.ts and
// identity/id-token.test.ts, the sealed login flow in identity/authz.test.ts.

const provider = address('lastbytes', 'thing');
const release = fakeRelease(provider, '1.0.0', ['linux_amd64']);
const archive = '/v1/archives/registry.example.com/lastbytes/thing/1.0.0/terraform-provider-thing_1.0.0_linux_amd64.zip';

beforeAll(async () => {
  await seed([release]);
});

describe('signed download URLs', () => {
  it('a signature differing only in its last byte → 403; the right one → 200', async () => {
    const expires = Math.floor(Date.now() / 1000) + 600;
    const query = new URLSearchParams(await signatureQuery(settings(env), archive, expires));
    const signature = query.get('signature')!;
    expect((await get(`${archive}?expires=${expires}&signature=${signature}`)).status).toBe(200);
    expect((await get(`${archive}?expires=${expires}&signature=${lastByteFlipped(signature)}`)).status).toBe(403);
  });
});

describe('read tokens', () => {
  it('a token differing only in its last byte → 401', async () => {
    const { token } = await issueToken(['lastbytes']);
    const versions = '/v1/providers/lastbytes/thing/versions';
    expect((await get(versions, bearer(token))).status).toBe(200);
    expect((await get(versions, bearer(`ert_${lastByteFlipped(token.slice(4))}`))).status).toBe(401);
  });

  it("a stored record whose hash differs from the token's only in its last digit → 401 (a damaged record)", async () => {
    const { token, record } = await issueToken(['lastbytes']);
    await env.REGISTRY_KV.put(tokenKey(tokenSha256(token)), JSON.stringify({ ...record, sha256: lastHexFlipped(record.sha256) }));
    const errors = console.error;
    console.error = () => {};
    try {
      expect((await get('/v1/providers/lastbytes/thing/versions', bearer(token))).status).toBe(401);
    } finally {
      console.error = errors;
    }
  });
});

describe('session cookies', () => {
  const request = (cookie: string) => new Request('https://registry.example.com/', { headers: { cookie } });

  it('a token session whose MAC differs only in its last byte is no session', async () => {
    const { token } = await issueToken(['lastbytes']);
    const outcome = await signIn(token, env);
    if (!('cookie' in outcome)) throw new Error(outcome.error);
    const value = outcome.cookie.split(';')[0]!.slice(SESSION_COOKIE.length + 1);
    const [hash, expires, mac] = value.split('.') as [string, string, string];
    expect(await readSession(request(`${SESSION_COOKIE}=${value}`), env)).not.toBeNull();
    expect(await readSession(request(`${SESSION_COOKIE}=${hash}.${expires}.${lastByteFlipped(mac)}`), env)).toBeNull();
    expect(await readSession(request(`${SESSION_COOKIE}=${lastHexFlipped(hash)}.${expires}.${mac}`), env)).toBeNull();
  });

  it("a person's sealed session differing only in its last byte is no session", async () => {
    const value = await sealPersonSession(env, {
      person: { issuer: 'https://idp.example', subject: 'alice', email: 'alice@acme.com' },
      scopes: ['lastbytes'],
      admin: true,
      expires: Math.floor(Date.now() / 1000) + 600,
      issued: Math.floor(Date.now() / 1000),
    });
    const session = await readSession(request(`${SESSION_COOKIE}=${value}`), env);
    expect(session?.person?.admin).toBe(true);
    expect(session?.record.scopes).toEqual(['lastbytes']);
    expect(await readSession(request(`${SESSION_COOKIE}=p.${lastByteFlipped(value.slice(2))}`), env)).toBeNull();
  });

  it("a person's session past its expiry is no session", async () => {
    const value = await sealPersonSession(env, {
      person: { issuer: 'https://idp.example', subject: 'alice' },
      scopes: ['lastbytes'],
      admin: false,
      expires: Math.floor(Date.now() / 1000) - 1,
      issued: Math.floor(Date.now() / 1000) - 60,
    });
    expect(await readSession(request(`${SESSION_COOKIE}=${value}`), env)).toBeNull();
  });
});
