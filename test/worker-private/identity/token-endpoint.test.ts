import { beforeAll, describe, expect, it } from 'vitest';
import { base64url } from '../../../src/access/crypto/bytes';
import { tokenSha256 } from '../../../src/access/tokens';
import { sha256Hex } from '../../../src/protocol/hashes';
import { loginCodeObjectKey, tokenKey } from '../../../src/store/layout';
import { storeLoginCode } from '../../../src/store/identity/login-codes';
import { listPersonTokens, markPersonRevoked, personKey } from '../../../src/store/identity/person-tokens';
import { parseTokenRecord } from '../../../src/store/tokens/read';
import { address, env, fakeRelease, getWith, seed } from '../helpers';
import { lastByteFlipped, oidcEnv, pkce } from './helpers';

// login.v1 token: the one-time code + PKCE verifier → an ert_ read token naming the person. The code is single
// use even when requests race (an R2 conditional write), bound to Terraform's challenge and redirect URI, short-lived;
// every refusal issues nothing.

const REDIRECT = 'http://localhost:10003/login';
const person = { issuer: 'http://127.0.0.1:9', subject: 'alice-sub', email: 'alice@acme.com' };
const config = oidcEnv();

beforeAll(async () => {
  await seed([fakeRelease(address('acme', 'thing'), '1.0.0', ['linux_amd64'])]);
});

async function newCode(
  options: { expiresAt?: number; issuedAt?: number; scopes?: string[]; person?: typeof person } = {},
): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = await pkce();
  const code = `erc_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
  await storeLoginCode(env.REGISTRY_R2, sha256Hex(code), {
    codeChallenge: challenge,
    redirectUri: REDIRECT,
    expiresAt: options.expiresAt ?? Date.now() + 60_000,
    issuedAt: options.issuedAt ?? Date.now(),
    person: options.person ?? person,
    scopes: options.scopes ?? ['acme'],
    tokenDays: 7,
  });
  return { code, verifier };
}

function exchange(fields: Record<string, string | undefined>, init: RequestInit = {}): Promise<Response> {
  const body = new URLSearchParams(
    Object.entries({ grant_type: 'authorization_code', client_id: 'terraform-cli', redirect_uri: REDIRECT, ...fields }).filter(
      (e): e is [string, string] => e[1] !== undefined,
    ),
  ).toString();
  return getWith(config, '/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, ...init });
}

async function expectRefused(response: Response, error = 'invalid_grant'): Promise<string> {
  expect(response.status).toBe(400);
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = await response.json<{ error: string; error_description: string; access_token?: string }>();
  expect(body.error).toBe(error);
  expect(body.access_token).toBeUndefined();
  return body.error_description;
}

describe('POST /oauth/token', () => {
  it('exchanges a code and its verifier for a read token that names the person, scoped and expiring per the policy', async () => {
    const { code, verifier } = await newCode();
    const response = await exchange({ code, code_verifier: verifier });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = await response.json<{ access_token: string; token_type: string; expires_in: number }>();
    expect(body.token_type).toBe('bearer');
    expect(body.access_token).toMatch(/^ert_[A-Za-z0-9_-]{43}$/);
    expect(body.expires_in).toBe(7 * 86_400);

    const record = parseTokenRecord((await env.REGISTRY_KV.get(tokenKey(tokenSha256(body.access_token)), 'text'))!)!;
    expect(record.person).toEqual(person);
    expect(record.scopes).toEqual(['acme']);
    expect(Date.parse(record.expires!) - Date.parse(record.created)).toBe(7 * 86_400_000);
    expect(JSON.stringify(record)).not.toContain(body.access_token);
    expect((await listPersonTokens(env.REGISTRY_R2, personKey(person))).map((t) => t.id)).toContain(record.id);
    // The code is gone; the token reads its scope and nothing else.
    expect(await env.REGISTRY_R2.head(loginCodeObjectKey(sha256Hex(code)))).toBeNull();
    const auth = { headers: { authorization: `Bearer ${body.access_token}` } };
    expect((await getWith(config, '/v1/providers/acme/thing/versions', auth)).status).toBe(200);
    expect((await getWith(config, '/v1/providers/other/thing/versions', auth)).status).toBe(403);
  });

  it('a code used twice: the second exchange is refused', async () => {
    const { code, verifier } = await newCode();
    expect((await exchange({ code, code_verifier: verifier })).status).toBe(200);
    expect(await expectRefused(await exchange({ code, code_verifier: verifier }))).toContain('unknown, expired or already used');
  });

  it('racing exchanges of one code: exactly one token is issued', async () => {
    const { code, verifier } = await newCode();
    const responses = await Promise.all(Array.from({ length: 6 }, () => exchange({ code, code_verifier: verifier })));
    expect(responses.map((r) => r.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);
  });

  it('a wrong code_verifier is refused and burns the code (the right one fails afterwards)', async () => {
    const { code, verifier } = await newCode();
    expect(await expectRefused(await exchange({ code, code_verifier: (await pkce()).verifier }))).toContain('does not match the code_challenge');
    await expectRefused(await exchange({ code, code_verifier: verifier }));
  });

  it('a code_verifier differing from the right one only in its last character is refused', async () => {
    const { code, verifier } = await newCode();
    const last = verifier.at(-1) === 'A' ? 'B' : 'A';
    expect(await expectRefused(await exchange({ code, code_verifier: verifier.slice(0, -1) + last }))).toContain('does not match');
  });

  it('a code differing from the right one only in its last byte is refused (and the right one still works)', async () => {
    const { code, verifier } = await newCode();
    const flipped = `erc_${lastByteFlipped(code.slice(4))}`;
    await expectRefused(await exchange({ code: flipped, code_verifier: verifier }));
    expect((await exchange({ code, code_verifier: verifier })).status).toBe(200);
  });

  it('no code_verifier (PKCE is required) or a malformed one', async () => {
    const { code } = await newCode();
    expect(await expectRefused(await exchange({ code }))).toContain('PKCE is required');
    expect(await expectRefused(await exchange({ code, code_verifier: 'short' }))).toContain('PKCE is required');
  });

  it('an expired code', async () => {
    const { code, verifier } = await newCode({ expiresAt: Date.now() - 1 });
    expect(await expectRefused(await exchange({ code, code_verifier: verifier }))).toContain('expired');
  });

  it("a code issued before an admin revoked all of the person's tokens no longer redeems (offboarding); one issued after does", async () => {
    const carol = { issuer: person.issuer, subject: 'carol-sub', email: 'carol@acme.com' };
    const pending = await newCode({ person: carol });
    const revokedAt = Date.now() + 5; // the admin's "revoke all" (POST /tokens/revoke-person writes this marker)
    await markPersonRevoked(env.REGISTRY_R2, personKey(carol), revokedAt);
    expect(await expectRefused(await exchange({ code: pending.code, code_verifier: pending.verifier }))).toContain(
      "an administrator revoked this person's access after the code was issued",
    );
    expect(await listPersonTokens(env.REGISTRY_R2, personKey(carol))).toEqual([]);
    // A sign-in after the revocation (the provider still lets them in) gets a code that works.
    const later = await newCode({ person: carol, issuedAt: revokedAt + 1 });
    expect((await exchange({ code: later.code, code_verifier: later.verifier })).status).toBe(200);
  });

  it("another redirect_uri than the authorization request's", async () => {
    const { code, verifier } = await newCode();
    expect(await expectRefused(await exchange({ code, code_verifier: verifier, redirect_uri: 'http://localhost:10004/login' }))).toContain(
      'redirect_uri differs',
    );
  });

  it('another client, another grant type, a body that is not a form, a parameter twice', async () => {
    const { code, verifier } = await newCode();
    await expectRefused(await exchange({ code, code_verifier: verifier, client_id: 'other' }), 'invalid_client');
    await expectRefused(await exchange({ code, code_verifier: verifier, grant_type: 'password' }), 'unsupported_grant_type');
    await expectRefused(
      await getWith(config, '/oauth/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) }),
      'invalid_request',
    );
    const twice = new URLSearchParams({ grant_type: 'authorization_code', client_id: 'terraform-cli', redirect_uri: REDIRECT, code, code_verifier: verifier });
    twice.append('code', code);
    await expectRefused(
      await getWith(config, '/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: twice.toString() }),
      'invalid_request',
    );
    // None of these touched the code: it still works once.
    expect((await exchange({ code, code_verifier: verifier })).status).toBe(200);
  });

  it('an unknown or malformed code', async () => {
    await expectRefused(await exchange({ code: `erc_${'A'.repeat(43)}`, code_verifier: (await pkce()).verifier }));
    await expectRefused(await exchange({ code: 'not-a-code', code_verifier: (await pkce()).verifier }));
  });

  it('GET is refused (a token is never sent in a URL)', async () => {
    expect((await getWith(config, '/oauth/token?grant_type=authorization_code')).status).toBe(405);
  });
});
