import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { verifyIdToken } from '../../../src/access/id-token';
import { evaluatePolicy, GROUP_SESSION_SECONDS, parsePolicy, PolicyError } from '../../../src/access/policy';
import { ORIGIN, getWith } from '../helpers';
import { oidcEnv, POLICY } from './helpers';

// LOGIN_POLICY: parsed strictly (an invalid one makes login answer 503, never a wide-open default) and applied to ID-token claims.

describe('parsePolicy refuses, naming the problem', () => {
  const cases: [string, string | undefined, RegExp][] = [
    ['unset', undefined, /LOGIN_POLICY is not set/],
    ['not JSON', '{rules:', /not JSON/],
    ['an array', '[]', /JSON object/],
    ['no rules', '{"rules":[]}', /rules must be a non-empty array/],
    ['a rule without a condition', '{"rules":[{"scopes":["acme"]}]}', /rules\[0\]\.if must be an object/],
    ['an empty condition (would match everybody)', '{"rules":[{"if":{},"scopes":["*"]}]}', /empty: it would match everybody/],
    ['a non-string claim value', '{"rules":[{"if":{"groups":["a"]},"scopes":["acme"]}]}', /must be a non-empty string/],
    ['no scopes', '{"rules":[{"if":{"groups":"a"},"scopes":[]}]}', /scopes must be a non-empty array/],
    ['an invalid scope', '{"rules":[{"if":{"groups":"a"},"scopes":["a/b/c"]}]}', /scopes: scope "a\/b\/c"/],
    ['an unknown key (a typo)', '{"rules":[{"if":{"groups":"a"},"scopes":["acme"]}],"admin":{"groups":"x"}}', /unknown key "admin"/],
    ['an unknown rule key', '{"rules":[{"iff":{"groups":"a"},"scopes":["acme"]}]}', /unknown key "iff"/],
    ['token_days 0', '{"rules":[{"if":{"groups":"a"},"scopes":["acme"]}],"token_days":0}', /token_days must be a whole number/],
    ['token_days fractional', '{"rules":[{"if":{"groups":"a"},"scopes":["acme"]}],"token_days":1.5}', /token_days/],
    ['token_days over a year', '{"rules":[{"if":{"groups":"a"},"scopes":["acme"]}],"token_days":366}', /token_days/],
    // Hostile: `{"__proto__": …}` used to become a condition with no claims, matching everybody.
    ['a claim named __proto__ (would match everybody)', '{"rules":[{"if":{"__proto__":"x"},"scopes":["*"]}]}', /"__proto__" cannot be a claim name/],
    ['a claim named constructor', '{"rules":[{"if":{"constructor":"x"},"scopes":["*"]}]}', /"constructor" cannot be a claim name/],
    ['a claim named prototype', '{"rules":[{"if":{"prototype":"x"},"scopes":["*"]}]}', /"prototype" cannot be a claim name/],
    [
      'an admins condition on __proto__',
      '{"rules":[{"if":{"groups":"a"},"scopes":["acme"]}],"admins":{"__proto__":"x"}}',
      /"__proto__" cannot be a claim name/,
    ],
    ['an empty admins condition', '{"rules":[{"if":{"groups":"a"},"scopes":["acme"]}],"admins":{}}', /admins is empty/],
  ];
  for (const [what, text, message] of cases) {
    it(what, () => {
      expect(() => parsePolicy(text)).toThrow(PolicyError);
      expect(() => parsePolicy(text)).toThrow(message);
    });
  }

  it('accepts the documented example and normalises scopes', () => {
    const policy = parsePolicy(JSON.stringify({ ...POLICY, rules: [...POLICY.rules, { if: { sub: 'x' }, scopes: ['ACME'] }] }));
    expect(policy.tokenDays).toBe(7);
    expect(policy.rules[2]!.scopes).toEqual(['acme']);
    expect(parsePolicy('{"rules":[{"if":{"groups":"a"},"scopes":["acme"]}]}').tokenDays).toBe(30);
  });
});

describe('evaluatePolicy', () => {
  const policy = parsePolicy(JSON.stringify(POLICY));

  it('a string claim must equal the value; an array claim must contain it', () => {
    expect(evaluatePolicy(policy, { groups: 'platform' }).scopes).toEqual(['acme']);
    expect(evaluatePolicy(policy, { groups: ['x', 'platform'] }).scopes).toEqual(['acme']);
    expect(evaluatePolicy(policy, { groups: 'platform-team' }).scopes).toEqual([]);
    expect(evaluatePolicy(policy, { groups: ['platformx'] }).scopes).toEqual([]);
    expect(evaluatePolicy(policy, { groups: { platform: true } }).scopes).toEqual([]);
  });

  it('email_domain counts only with email_verified true, and matches the whole domain', () => {
    expect(evaluatePolicy(policy, { email: 'a@acme.com', email_verified: true }).scopes).toEqual(['acme', 'registry.terraform.io/*']);
    expect(evaluatePolicy(policy, { email: 'a@ACME.com', email_verified: true }).scopes).toEqual(['acme', 'registry.terraform.io/*']);
    expect(evaluatePolicy(policy, { email: 'a@acme.com', email_verified: false }).scopes).toEqual([]);
    expect(evaluatePolicy(policy, { email: 'a@acme.com', email_verified: 'true' }).scopes).toEqual([]);
    expect(evaluatePolicy(policy, { email: 'a@acme.com' }).scopes).toEqual([]);
    expect(evaluatePolicy(policy, { email: 'a@evilacme.com', email_verified: true }).scopes).toEqual([]);
    expect(evaluatePolicy(policy, { email: 'a@acme.com.evil.io', email_verified: true }).scopes).toEqual([]);
    expect(evaluatePolicy(policy, { email: 'x@evil.io@acme.com', email_verified: true }).scopes).toEqual(['acme', 'registry.terraform.io/*']);
  });

  it('scopes are the union of matching rules; every claim of a rule must match; admin by its own condition', () => {
    const both = evaluatePolicy(policy, { groups: ['platform', 'registry-admins'], email: 'a@acme.com', email_verified: true });
    expect(both).toEqual({ scopes: ['acme', 'registry.terraform.io/*'], admin: true, fromGroups: true });
    const strict = parsePolicy('{"rules":[{"if":{"groups":"a","hd":"acme.com"},"scopes":["acme"]}]}');
    expect(evaluatePolicy(strict, { groups: 'a' }).scopes).toEqual([]);
    expect(evaluatePolicy(strict, { groups: 'a', hd: 'acme.com' })).toEqual({ scopes: ['acme'], admin: false, fromGroups: true });
  });

  it('nobody is let in by default: no claims, no scopes', () => {
    expect(evaluatePolicy(policy, {})).toEqual({ scopes: [], admin: false, fromGroups: false });
  });

  it('a grant from group membership is marked fromGroups (its page session lasts GROUP_SESSION_SECONDS); one from the verified email alone is not', () => {
    expect(GROUP_SESSION_SECONDS).toBe(3600);
    expect(evaluatePolicy(policy, { groups: 'platform' }).fromGroups).toBe(true);
    expect(evaluatePolicy(policy, { email: 'a@acme.com', email_verified: true }).fromGroups).toBe(false);
    expect(evaluatePolicy(policy, { groups: 'registry-admins' })).toEqual({ scopes: [], admin: true, fromGroups: true });
  });

  it('a rule on email needs email_verified true: a real signed ID token, verified, with an unverified address gets nothing', async () => {
    const byEmail = parsePolicy(JSON.stringify({ rules: [{ if: { email: 'alice@acme.com' }, scopes: ['acme'] }] }));
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const keys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256' }] });
    const now = Math.floor(Date.now() / 1000);
    const signIn = async (extra: Record<string, unknown>) => {
      const token = await new SignJWT({
        iss: 'https://idp.acme.example',
        aud: 'edge-registry',
        sub: 'alice',
        nonce: 'n',
        iat: now,
        exp: now + 300,
        email: 'alice@acme.com',
        ...extra,
      })
        .setProtectedHeader({ alg: 'ES256', kid: 'k' })
        .sign(privateKey);
      const claims = await verifyIdToken(token, { issuer: 'https://idp.acme.example', clientId: 'edge-registry', nonce: 'n', keys });
      return evaluatePolicy(byEmail, claims as Record<string, unknown>).scopes;
    };
    expect(await signIn({ email_verified: true })).toEqual(['acme']);
    expect(await signIn({ email_verified: false })).toEqual([]);
    expect(await signIn({})).toEqual([]);
    expect(await signIn({ email_verified: 'true' })).toEqual([]);
  });
});

describe('configuration at the edge', () => {
  it('without OIDC_ISSUER: no login.v1, and the login routes are 404', async () => {
    const discovery = await (await getWith({}, '/.well-known/terraform.json')).json<Record<string, unknown>>();
    expect(discovery['login.v1']).toBeUndefined();
    expect((await getWith({}, '/oauth/authorization')).status).toBe(404);
    expect((await getWith({}, '/oauth/token', { method: 'POST' })).status).toBe(404);
    expect((await getWith({}, '/login/sso')).status).toBe(404);
  });

  it('with OIDC_ISSUER: discovery advertises login.v1', async () => {
    const discovery = await (await getWith(oidcEnv(), '/.well-known/terraform.json')).json<Record<string, unknown>>();
    expect(discovery['login.v1']).toEqual({
      client: 'terraform-cli',
      grant_types: ['authz_code'],
      authz: '/oauth/authorization',
      token: '/oauth/token',
      ports: [10000, 10010],
    });
    expect(new URL('/oauth/authorization', `${ORIGIN}/.well-known/terraform.json`).href).toBe(`${ORIGIN}/oauth/authorization`);
  });

  const invalid: [string, Partial<ReturnType<typeof oidcEnv>>, RegExp][] = [
    ['an invalid LOGIN_POLICY', { LOGIN_POLICY: '{"rules":[{"if":{},"scopes":["*"]}]}' }, /would match everybody/],
    ['no LOGIN_POLICY', { LOGIN_POLICY: undefined }, /LOGIN_POLICY is not set/],
    ['an http issuer off loopback', { OIDC_ISSUER: 'http://idp.example.com' }, /must be an https URL/],
    ['no client id', { OIDC_CLIENT_ID: '' }, /OIDC_CLIENT_ID is not set/],
    ['no URL_SIGNING_SECRET', { URL_SIGNING_SECRET: '' }, /URL_SIGNING_SECRET is not set/],
  ];
  for (const [what, overrides, message] of invalid) {
    it(`${what}: login answers 503 naming the problem, issues nothing, and the registry keeps serving`, async () => {
      const errors: string[] = [];
      const original = console.error;
      console.error = (...args: unknown[]) => errors.push(args.join(' '));
      try {
        const page = await getWith(oidcEnv(overrides), '/oauth/authorization?client_id=terraform-cli', { headers: { accept: 'text/html' } });
        expect(page.status).toBe(503);
        expect(page.headers.get('location')).toBeNull();
        expect(page.headers.get('set-cookie')).toBeNull();
        expect(await page.text()).toMatch(message);
        expect((await getWith(oidcEnv(overrides), '/login/sso')).status).toBe(503);
        const token = await getWith(oidcEnv(overrides), '/oauth/token', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=authorization_code',
        });
        expect(token.status).toBe(503);
        expect(((await token.json()) as { error: string }).error).toBe('temporarily_unavailable');
        expect((await getWith(oidcEnv(overrides), '/.well-known/terraform.json')).status).toBe(200);
      } finally {
        console.error = original;
      }
      expect(errors.join('\n')).toMatch(message);
    });
  }
});
