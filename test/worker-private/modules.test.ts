import { beforeAll, describe, expect, it } from 'vitest';
import { moduleAddress } from '../../src/protocol/modules-v1';
import { seedModule } from '../fixtures/modules';
import { signIn } from '../../src/access/session';
import { bearer, env, errorsOf, get, issueToken } from './helpers';
import { settings } from '../../src/config';

const vpc = moduleAddress(env.REGISTRY_HOSTNAME, 'acme', 'vpc', 'aws');
const other = moduleAddress(env.REGISTRY_HOSTNAME, 'other_ns', 'net', 'aws');
let acmeToken: string;
let bytes: Uint8Array;

beforeAll(async () => {
  bytes = (await seedModule(env.REGISTRY_KV, env.REGISTRY_R2, vpc, '2.1.0')).bytes;
  await seedModule(env.REGISTRY_KV, env.REGISTRY_R2, other, '1.0.0');
  acmeToken = (await issueToken(['acme'])).token;
});

describe('modules.v1 in private mode', () => {
  it('discovery stays public', async () => {
    expect((await get('/.well-known/terraform.json')).status).toBe(200);
  });

  it('401 with WWW-Authenticate without a token, for lists and downloads', async () => {
    for (const path of ['/v1/modules/acme/vpc/aws/versions', '/v1/modules/acme/vpc/aws/2.1.0/download']) {
      const response = await get(path);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toContain('Bearer');
    }
  });

  it('403 for a namespace outside the token scope (same answer whether the module exists or not)', async () => {
    const existing = await get('/v1/modules/other_ns/net/aws/versions', bearer(acmeToken));
    const missing = await get('/v1/modules/other_ns/none/aws/versions', bearer(acmeToken));
    expect(existing.status).toBe(403);
    expect(missing.status).toBe(403);
    expect(await errorsOf(existing)).toEqual(await errorsOf(missing));
  });

  it('a scoped token lists and downloads; the package URL is signed, short-lived and works without the token', async () => {
    const list = await get('/v1/modules/acme/vpc/aws/versions', bearer(acmeToken));
    expect(list.status).toBe(200);
    expect(list.headers.get('cache-control')).toMatch(/^private/);
    const download = await get('/v1/modules/acme/vpc/aws/2.1.0/download', bearer(acmeToken));
    expect(download.status).toBe(204);
    expect(download.headers.get('cache-control')).toBe('private, no-store');
    const location = download.headers.get('x-terraform-get')!;
    expect(location).toMatch(
      /^\/v1\/module-archives\/registry\.example\.com\/acme\/vpc\/aws\/2\.1\.0\/vpc-aws-2\.1\.0\.tar\.gz\?expires=\d+&signature=[\w-]+$/,
    );
    const expires = Number(new URL(location, 'https://x').searchParams.get('expires'));
    expect(expires * 1000 - Date.now()).toBeLessThanOrEqual(15 * 60 * 1000 + 1000);
    const archive = await get(location);
    expect(archive.status).toBe(200);
    expect(archive.headers.get('cache-control')).toMatch(/^private, max-age=\d+$/);
    expect(new Uint8Array(await archive.arrayBuffer())).toEqual(bytes);
  });

  it('403 for an unsigned, altered, re-targeted or expired package URL', async () => {
    const location = (await get('/v1/modules/acme/vpc/aws/2.1.0/download', bearer(acmeToken))).headers.get('x-terraform-get')!;
    const [path, query] = location.split('?') as [string, string];
    expect((await get(path)).status).toBe(403);
    // A scoped read token is the other way in (OpenTofu 1.12's use_registry_credentials; module-download-form.test.ts).
    expect((await get(path, bearer(acmeToken))).status).toBe(200);
    expect((await get(`${path}?${query.replace(/signature=./, 'signature=A')}`)).status).toBe(403);
    expect((await get(`/v1/module-archives/registry.example.com/other_ns/net/aws/1.0.0/net-aws-1.0.0.tar.gz?${query}`)).status).toBe(403);
    const { signatureQuery } = await import('../../src/access/signed-urls');
    const past = Math.floor(Date.now() / 1000) - 1;
    const expired = await get(`${path}?${await signatureQuery(settings(env), path, past)}`);
    expect(expired.status).toBe(403);
    expect((await errorsOf(expired))[0]).toContain('expired');
  });

  it('pages: redirect to /login without a session; a session sees only the namespaces in its scope', async () => {
    for (const path of ['/modules', '/modules/acme/vpc/aws']) {
      const response = await get(path, { redirect: 'manual' });
      expect(response.status).toBe(303);
      expect(response.headers.get('location')).toBe(`/login?next=${encodeURIComponent(path)}`);
    }
    const outcome = await signIn(acmeToken, env);
    if ('error' in outcome) throw new Error(outcome.error);
    const cookie = { headers: { cookie: outcome.cookie.split(';')[0]! } };
    const page = await get('/modules/acme/vpc/aws', cookie);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('private, no-store');
    expect((await get('/modules/other_ns/net/aws', cookie)).status).toBe(404);
    const html = await (await get('/modules', cookie)).text();
    expect(html).toContain('acme/vpc/aws');
    expect(html).not.toContain('other_ns');
  });

  it('a token scoped to a namespace with an underscore reads it', async () => {
    const { token } = await issueToken(['other_ns']);
    expect((await get('/v1/modules/other_ns/net/aws/versions', bearer(token))).status).toBe(200);
  });
});
