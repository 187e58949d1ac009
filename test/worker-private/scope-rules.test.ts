import { beforeAll, describe, expect, it } from 'vitest';
import { parseScope, scopeGrants } from '../../src/access/scope';
import { authenticate, tokenSha256 } from '../../src/access/tokens';
import { tokenKey } from '../../src/store/layout';
import { address, bearer, env, fakeRelease, get, issueToken, seed } from './helpers';

// Rules a token scope must hold exactly: whole namespaces and hostnames, never prefixes or look-alikes.

const OWN = 'registry.example.com';
const scopeAllows = (scopes: string[], hostname: string, namespace: string, own: string) => scopeGrants(scopes, 'read', { hostname, namespace }, own);

beforeAll(async () => {
  await seed([
    fakeRelease(address('acme', 'thing'), '1.0.0', ['linux_amd64']),
    fakeRelease(address('acme-internal', 'thing'), '1.0.0', ['linux_amd64']),
    fakeRelease(address('acm', 'thing'), '1.0.0', ['linux_amd64']),
    fakeRelease(address('hashicorp', 'random', 'registry.terraform.io'), '3.6.0', ['linux_amd64']),
    fakeRelease(address('hashicorp', 'random', 'registry.terraform.io.evil.example'), '3.6.0', ['linux_amd64']),
  ]);
});

describe('scopeGrants, read form', () => {
  const cases: [scopes: string[], host: string, namespace: string, allowed: boolean][] = [
    [['acme'], OWN, 'acme', true],
    [['acme'], OWN, 'acme-internal', false],
    [['acme'], OWN, 'acm', false],
    [['acme-internal'], OWN, 'acme', false],
    [['acme'], 'registry.terraform.io', 'acme', false],
    [[`${OWN}/acme`], OWN, 'acme', true],
    [[`${OWN}/acme`], OWN, 'acme-internal', false],
    [['registry.terraform.io/hashicorp'], 'registry.terraform.io', 'hashicorp', true],
    [['registry.terraform.io/hashicorp'], 'registry.terraform.io', 'hashicorp2', false],
    [['registry.terraform.io/hashicorp'], 'registry.terraform.io.evil.example', 'hashicorp', false],
    [['registry.terraform.io/hashicorp'], 'terraform.io', 'hashicorp', false],
    [['registry.terraform.io/hashicorp'], OWN, 'hashicorp', false],
    [['registry.terraform.io/*'], 'registry.terraform.io', 'anything', true],
    [['registry.terraform.io/*'], 'registry.terraform.io.evil.example', 'anything', false],
    [['registry.terraform.io/*'], OWN, 'acme', false],
    [['*'], 'registry.terraform.io', 'hashicorp', true],
    [['*'], OWN, 'acme', true],
    [['other', 'acme'], OWN, 'acme', true],
    [[], OWN, 'acme', false],
  ];
  for (const [scopes, host, namespace, allowed] of cases) {
    it(`${JSON.stringify(scopes)} ${allowed ? 'allows' : 'refuses'} ${host}/${namespace}`, () => {
      expect(scopeAllows(scopes, host, namespace, OWN)).toBe(allowed);
    });
  }

  it('compares the registry hostname case-insensitively (REGISTRY_HOSTNAME may be written in capitals)', () => {
    expect(scopeAllows(['acme'], OWN, 'acme', 'Registry.Example.COM')).toBe(true);
    expect(scopeAllows(['acme'], 'registry.terraform.io', 'acme', 'Registry.Example.COM')).toBe(false);
  });
});

describe('parseScope, read form', () => {
  it('normalises to lower case and keeps *, NAMESPACE, HOST/NAMESPACE and HOST/*', () => {
    expect(parseScope('*', 'read')).toBe('*');
    expect(parseScope(' ACME ', 'read')).toBe('acme');
    expect(parseScope('Registry.Terraform.IO/HashiCorp', 'read')).toBe('registry.terraform.io/hashicorp');
    expect(parseScope('registry.terraform.io/*', 'read')).toBe('registry.terraform.io/*');
  });

  it('refuses anything else with an InputError', () => {
    for (const bad of ['', 'acme/', '*/acme', 'a/b/c', 'acme*', 'ac me', 'registry.terraform.io/hashi*']) {
      expect(() => parseScope(bad, 'read'), bad).toThrow(expect.objectContaining({ name: 'InputError' }));
    }
  });
});

describe('scopes on requests', () => {
  it('a token for acme cannot read the look-alike namespaces acme-internal or acm', async () => {
    const { token } = await issueToken(['acme']);
    expect((await get('/v1/providers/acme/thing/versions', bearer(token))).status).toBe(200);
    expect((await get('/v1/providers/acme-internal/thing/versions', bearer(token))).status).toBe(403);
    expect((await get('/v1/providers/acm/thing/versions', bearer(token))).status).toBe(403);
    expect((await get('/v1/mirror/registry.example.com/acme-internal/thing/index.json', bearer(token))).status).toBe(403);
  });

  it('a token for acme-internal cannot read acme', async () => {
    const { token } = await issueToken(['acme-internal']);
    expect((await get('/v1/providers/acme-internal/thing/versions', bearer(token))).status).toBe(200);
    expect((await get('/v1/providers/acme/thing/versions', bearer(token))).status).toBe(403);
  });

  it('a scope given in capitals matches requests in any case', async () => {
    const { token } = await issueToken(['ACME', 'Registry.Terraform.IO/HashiCorp']);
    expect((await get('/v1/providers/Acme/thing/versions', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/REGISTRY.terraform.io/hashicorp/random/index.json', bearer(token))).status).toBe(200);
  });

  it('HOST/* does not cover a hostname that merely starts with HOST', async () => {
    const { token } = await issueToken(['registry.terraform.io/*']);
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/index.json', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/registry.terraform.io.evil.example/hashicorp/random/index.json', bearer(token))).status).toBe(403);
  });
});

describe('token expiry and records', () => {
  it('a token is accepted until the millisecond before its expiry and refused from that instant', async () => {
    const expires = '2031-01-01T00:00:00.000Z';
    const { token } = await issueToken(['acme'], { expires });
    const request = new Request('https://registry.example.com/v1/providers/acme/thing/versions', bearer(token));
    expect(await authenticate(request, env.REGISTRY_KV, Date.parse(expires) - 1)).toMatchObject({ ok: true });
    expect(await authenticate(request, env.REGISTRY_KV, Date.parse(expires))).toEqual({
      ok: false,
      message: `the token expired at ${expires}`,
      error: 'invalid_token',
    });
  });

  it('a record whose expiry cannot be read is damaged: its token is refused (401), not treated as never expiring', async () => {
    const { token, record } = await issueToken(['acme']);
    await env.REGISTRY_KV.put(tokenKey(tokenSha256(token)), JSON.stringify({ ...record, expires: 'next tuesday' }));
    expect((await get('/v1/providers/acme/thing/versions', bearer(token))).status).toBe(401);
  });
});
