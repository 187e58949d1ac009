import { beforeAll, describe, expect, it } from 'vitest';
import { tokenSha256 } from '../../src/access/tokens';
import { tokenKey } from '../../src/store/layout';
import { deleteTokenRecord } from '../../src/store/tokens/write';
import { address, bearer, env, errorsOf, fakeRelease, get, issueToken, seed } from './helpers';

// Private mode (vitest project worker-private: ACCESS=private, URL_SIGNING_SECRET set).

const acme = address('acme', 'thing');
const other = address('other', 'thing');
const upstream = address('hashicorp', 'random', 'registry.terraform.io');
const upstreamAcme = address('acme', 'thing', 'registry.terraform.io');

const METADATA = {
  'registry versions': '/v1/providers/acme/thing/versions',
  'registry find-a-package': '/v1/providers/acme/thing/1.0.0/download/linux/amd64',
  'mirror index.json': '/v1/mirror/registry.example.com/acme/thing/index.json',
  'mirror VERSION.json': '/v1/mirror/registry.example.com/acme/thing/1.0.0.json',
};

beforeAll(async () => {
  await seed([
    fakeRelease(acme, '1.0.0', ['linux_amd64']),
    fakeRelease(other, '1.0.0', ['linux_amd64']),
    fakeRelease(upstream, '3.6.0', ['linux_amd64']),
    fakeRelease(upstreamAcme, '2.0.0', ['linux_amd64']),
  ]);
});

async function expect401(response: Response, error: 'invalid_token' | null): Promise<string> {
  expect(response.status).toBe(401);
  expect(response.headers.get('content-type')).toBe('application/json');
  expect(response.headers.get('cache-control')).toBe('no-store');
  const challenge = response.headers.get('www-authenticate');
  expect(challenge).toMatch(/^Bearer realm="edge-registry"/);
  if (error) expect(challenge).toContain(`error="${error}"`);
  else expect(challenge).not.toContain('error=');
  const errors = await errorsOf(response);
  expect(errors).toHaveLength(1);
  return errors[0]!;
}

describe('discovery in private mode', () => {
  it('stays public: 200 without a token', async () => {
    const response = await get('/.well-known/terraform.json');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ 'providers.v1': '/v1/providers/', 'modules.v1': '/v1/modules/' });
  });
});

describe('metadata routes without a valid token → 401', () => {
  for (const [name, path] of Object.entries(METADATA)) {
    it(`${name}: no Authorization header`, async () => {
      expect(await expect401(await get(path), null)).toContain('private');
    });
  }

  it('HEAD without a token is 401 too', async () => {
    const response = await get(METADATA['registry versions'], { method: 'HEAD' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  const malformed = {
    'another scheme': 'Basic dXNlcjpwYXNz',
    'Bearer without a token': 'Bearer',
    'a token not of this registry': 'Bearer ghp_0123456789abcdefghij0123456789abcdefghij',
    'a truncated token': 'Bearer ert_abc',
    'two credentials': `Bearer ert_${'a'.repeat(43)} ert_${'b'.repeat(43)}`,
    'a control character': `Bearer ert_${'a'.repeat(42)}\u0001`,
  };
  for (const [name, header] of Object.entries(malformed)) {
    it(`malformed: ${name}`, async () => {
      const headers = new Headers();
      try {
        headers.set('authorization', header);
      } catch {
        return; // the runtime itself refuses this header value; nothing reaches the Worker
      }
      expect(await expect401(await get(METADATA['mirror index.json'], { headers }), 'invalid_token')).toContain('Authorization');
    });
  }

  it('an unknown (well-formed) token', async () => {
    const message = await expect401(await get(METADATA['registry versions'], bearer(`ert_${'x'.repeat(43)}`)), 'invalid_token');
    expect(message).toContain('unknown or revoked');
  });

  it('an expired token', async () => {
    const { token } = await issueToken(['acme'], { expires: new Date(Date.now() - 1000).toISOString() });
    const message = await expect401(await get(METADATA['registry versions'], bearer(token)), 'invalid_token');
    expect(message).toContain('expired');
  });

  it('a token that expires later is accepted', async () => {
    const { token } = await issueToken(['acme'], { expires: new Date(Date.now() + 3600_000).toISOString() });
    expect((await get(METADATA['registry versions'], bearer(token))).status).toBe(200);
  });

  it('a revoked token: refused on the very next request', async () => {
    const { token, record } = await issueToken(['acme']);
    expect((await get(METADATA['mirror index.json'], bearer(token))).status).toBe(200);
    await deleteTokenRecord(env.REGISTRY_KV, record.sha256);
    const message = await expect401(await get(METADATA['mirror index.json'], bearer(token)), 'invalid_token');
    expect(message).toContain('revoked');
  });

  it('a damaged token record refuses its token with 401, not a 5xx', async () => {
    const { token, record } = await issueToken(['acme']);
    await env.REGISTRY_KV.put(tokenKey(record.sha256), '{"not":"a record"');
    await expect401(await get(METADATA['registry versions'], bearer(token)), 'invalid_token');
  });

  it('a record stored under another hash does not authenticate (hash compared with the record)', async () => {
    const { token } = await issueToken(['acme']);
    const { record: victim } = await issueToken(['*']);
    await env.REGISTRY_KV.put(tokenKey(tokenSha256(token)), JSON.stringify(victim));
    await expect401(await get(METADATA['registry versions'], bearer(token)), 'invalid_token');
  });

  it('checks the token before the path: a malformed namespace without a token is 401, with one 400', async () => {
    await expect401(await get('/v1/providers/-bad-/thing/versions'), null);
    const { token } = await issueToken(['acme']);
    expect((await get('/v1/providers/-bad-/thing/versions', bearer(token))).status).toBe(400);
  });
});

describe('scopes', () => {
  it('a token for namespace acme reads every acme metadata route', async () => {
    const { token } = await issueToken(['acme']);
    for (const path of Object.values(METADATA)) {
      const response = await get(path, bearer(token));
      expect(response.status, path).toBe(200);
    }
  });

  it('a token without the namespace in scope → 403 with a JSON error (not 404)', async () => {
    const { token } = await issueToken(['acme']);
    const response = await get('/v1/providers/other/thing/versions', bearer(token));
    expect(response.status).toBe(403);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('www-authenticate')).toBeNull();
    expect((await errorsOf(response))[0]).toContain('no access to namespace "other"');
  });

  it('403 does not reveal whether an out-of-scope provider exists', async () => {
    const { token } = await issueToken(['acme']);
    const existing = await get('/v1/providers/other/thing/versions', bearer(token));
    const missing = await get('/v1/providers/other/nothing/versions', bearer(token));
    const missingNamespace = await get('/v1/providers/nobody/nothing/versions', bearer(token));
    expect([existing.status, missing.status, missingNamespace.status]).toEqual([403, 403, 403]);
  });

  it('within scope, a missing provider is a plain 404', async () => {
    const { token } = await issueToken(['acme']);
    expect((await get('/v1/providers/acme/nothing/versions', bearer(token))).status).toBe(404);
  });

  it('several namespaces', async () => {
    const { token } = await issueToken(['acme', 'other']);
    expect((await get('/v1/providers/acme/thing/versions', bearer(token))).status).toBe(200);
    expect((await get('/v1/providers/other/thing/versions', bearer(token))).status).toBe(200);
  });

  it('"*" reads every namespace, of this registry and mirrored upstream ones', async () => {
    const { token } = await issueToken(['*']);
    expect((await get('/v1/providers/other/thing/versions', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/index.json', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/3.6.0.json', bearer(token))).status).toBe(200);
  });

  it('a bare namespace means that namespace of this registry only, not the same name upstream', async () => {
    const { token } = await issueToken(['acme']);
    expect((await get('/v1/mirror/registry.example.com/acme/thing/index.json', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/registry.terraform.io/acme/thing/index.json', bearer(token))).status).toBe(403);
  });

  it('HOST/NAMESPACE names a mirrored upstream namespace', async () => {
    const { token } = await issueToken(['registry.terraform.io/hashicorp']);
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/index.json', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/Registry.Terraform.io/HashiCorp/random/3.6.0.json', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/registry.terraform.io/acme/thing/index.json', bearer(token))).status).toBe(403);
    expect((await get('/v1/mirror/registry.example.com/hashicorp/random/index.json', bearer(token))).status).toBe(403);
    expect((await get('/v1/providers/acme/thing/versions', bearer(token))).status).toBe(403);
  });

  it('HOST/* names every namespace of one upstream host', async () => {
    const { token } = await issueToken(['registry.terraform.io/*']);
    expect((await get('/v1/mirror/registry.terraform.io/hashicorp/random/index.json', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/registry.terraform.io/acme/thing/index.json', bearer(token))).status).toBe(200);
    expect((await get('/v1/mirror/registry.example.com/acme/thing/index.json', bearer(token))).status).toBe(403);
  });

  it('the registry hostname written out (registry.example.com/acme) equals the bare namespace', async () => {
    const { token } = await issueToken(['registry.example.com/acme']);
    expect((await get('/v1/providers/acme/thing/versions', bearer(token))).status).toBe(200);
  });

  it('the Bearer scheme is case-insensitive', async () => {
    const { token } = await issueToken(['acme']);
    const response = await get(METADATA['registry versions'], { headers: { authorization: `bearer ${token}` } });
    expect(response.status).toBe(200);
  });
});

describe('Cache-Control of authenticated responses: never shareable', () => {
  it('version lists are private', async () => {
    const { token } = await issueToken(['acme']);
    for (const path of [METADATA['registry versions'], METADATA['mirror index.json']]) {
      const cacheControl = (await get(path, bearer(token))).headers.get('cache-control')!;
      expect(cacheControl).toMatch(/^private, max-age=\d+$/);
      expect(cacheControl).not.toContain('public');
    }
  });

  it('documents with signed URLs are not stored at all', async () => {
    const { token } = await issueToken(['acme']);
    for (const path of [METADATA['registry find-a-package'], METADATA['mirror VERSION.json']]) {
      expect((await get(path, bearer(token))).headers.get('cache-control')).toBe('private, no-store');
    }
  });

  it('401 and 403 answers are not stored', async () => {
    const { token } = await issueToken(['other']);
    expect((await get(METADATA['registry versions'])).headers.get('cache-control')).toBe('no-store');
    expect((await get(METADATA['registry versions'], bearer(token))).headers.get('cache-control')).toBe('no-store');
  });
});
