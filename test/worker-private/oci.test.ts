import { beforeAll, describe, expect, it } from 'vitest';
import { address, atFakeTime, bearer, env, fakeRelease, get, issueToken, seed } from './helpers';

/**
 * The OCI view in private mode (docs/oci.md): the Bearer challenge, the
 * token endpoint taking the registry's read tokens (Basic password, Bearer,
 * POST form), short-lived per-repository tokens, and the read token itself
 * as a Bearer credential — every refusal with OCI's error JSON, and the
 * same scope rules as /v1/ (one check: authenticate + scopeGrants).
 */
const provider = address('acme', 'ocipriv');
const other = address('other', 'thing');
const REPO = 'providers/registry.example.com/acme/ocipriv';
const OTHER = 'providers/registry.example.com/other/thing';
let acme: string;
let publish: string;

beforeAll(async () => {
  await seed([fakeRelease(provider, '1.0.0', ['linux_amd64']), fakeRelease(other, '1.0.0', ['linux_amd64'])]);
  acme = (await issueToken(['acme'])).token;
  publish = (await issueToken(['acme'], { purpose: 'publish' })).token;
});

const basic = (password: string) => ({ headers: { authorization: `Basic ${btoa(`anyone:${password}`)}` } });
async function code(response: Response): Promise<string> {
  return (await response.json<{ errors: { code: string }[] }>()).errors[0]!.code;
}
async function ociToken(scope: string, init: RequestInit): Promise<Response> {
  return get(`/v2/token?service=registry.example.com&scope=${encodeURIComponent(scope)}`, init);
}

describe('the challenge', () => {
  it('GET /v2/ without credentials: 401 UNAUTHORIZED with a Bearer challenge naming the https token endpoint and the service', async () => {
    const response = await get('/v2/');
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="https://registry.example.com/v2/token",service="registry.example.com"');
    expect(await code(response)).toBe('UNAUTHORIZED');
  });

  it('a repository route names its pull scope', async () => {
    const response = await get(`/v2/${REPO}/manifests/1.0.0`, { method: 'HEAD' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer realm="https://registry.example.com/v2/token",service="registry.example.com",scope="repository:${REPO}:pull"`,
    );
  });
});

describe('the token endpoint', () => {
  it('issues a 60-second token for the repositories the read token covers (Basic password), which then pulls', async () => {
    const response = await ociToken(`repository:${REPO}:pull`, basic(acme));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = await response.json<{ token: string; access_token: string; expires_in: number }>();
    expect(body.token).toBe(body.access_token);
    expect(body.expires_in).toBe(60);
    expect(body.token).not.toContain(acme);
    for (const path of ['/v2/', `/v2/${REPO}/tags/list`, `/v2/${REPO}/manifests/1.0.0`]) {
      expect((await get(path, bearer(body.token))).status, path).toBe(200);
    }
    // Another repository with the same token: 401 insufficient_scope, so the client asks the endpoint again.
    const elsewhere = await get(`/v2/${OTHER}/tags/list`, bearer(body.token));
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
  });

  it('takes the read token as a Bearer header or in a POST form (refresh_token or password)', async () => {
    expect((await ociToken(`repository:${REPO}:pull`, bearer(acme))).status).toBe(200);
    for (const field of ['refresh_token', 'password']) {
      const form = new URLSearchParams({
        grant_type: field === 'password' ? 'password' : 'refresh_token',
        [field]: acme,
        service: 'registry.example.com',
        scope: `repository:${REPO}:pull`,
      });
      const response = await get('/v2/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
      expect(response.status, field).toBe(200);
      const { token } = await response.json<{ token: string }>();
      expect((await get(`/v2/${REPO}/manifests/1.0.0`, bearer(token))).status).toBe(200);
    }
  });

  it('refuses: no credentials 401, an unknown or publish token 401, a namespace outside the scopes 403 DENIED, a malformed name 400', async () => {
    const none = await ociToken(`repository:${REPO}:pull`, {});
    expect(none.status).toBe(401);
    expect(await code(none)).toBe('UNAUTHORIZED');
    expect((await ociToken(`repository:${REPO}:pull`, basic(`ert_${'A'.repeat(43)}`))).status).toBe(401);
    expect((await ociToken(`repository:${REPO}:pull`, basic(publish))).status).toBe(401);
    const out = await ociToken(`repository:${OTHER}:pull`, basic(acme));
    expect(out.status).toBe(403);
    const body = await out.json<{ errors: { code: string; message: string }[] }>();
    expect(body.errors[0]).toEqual({ code: 'DENIED', message: 'this token has no access to namespace "other" at registry.example.com; its scopes: acme' });
    expect((await ociToken('repository:elsewhere/a/b/c:pull', basic(acme))).status).toBe(400);
    const huge = await get('/v2/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `password=${'x'.repeat(9000)}`,
    });
    expect(huge.status).toBe(413);
    expect(await code(huge)).toBe('UNSUPPORTED');
  });

  it('an OCI token altered in its last byte, or older than 60 seconds, is refused', async () => {
    const { token } = await (await ociToken(`repository:${REPO}:pull`, basic(acme))).json<{ token: string }>();
    const last = token.at(-1) === 'A' ? 'B' : 'A';
    const altered = await get(`/v2/${REPO}/tags/list`, bearer(token.slice(0, -1) + last));
    expect(altered.status).toBe(401);
    expect(altered.headers.get('www-authenticate')).toContain('error="invalid_token"');
    // A token that widens its own repository list fails its MAC.
    const [payload, mac] = token.slice('eoci_'.length).split('.');
    const claims = JSON.parse(atob(payload!.replace(/-/g, '+').replace(/_/g, '/'))) as { r: string[]; e: number };
    const widened = btoa(JSON.stringify({ ...claims, r: [REPO, OTHER] }))
      .replace(/=+$/, '')
      .replace(/\+/g, '-')
      .replace(/\//g, '_');
    expect((await get(`/v2/${OTHER}/tags/list`, bearer(`eoci_${widened}.${mac}`))).status).toBe(401);
    const late = await atFakeTime(Date.now() + 61_000, () => get(`/v2/${REPO}/tags/list`, bearer(token)));
    expect(late.status).toBe(401);
  });
});

describe('the read token itself (an oci_credentials access_token)', () => {
  it('pulls what its scopes cover as a Bearer or Basic credential; 403 DENIED elsewhere; 401 for a publish token', async () => {
    expect((await get(`/v2/${REPO}/manifests/1.0.0`, bearer(acme))).status).toBe(200);
    expect((await get(`/v2/${REPO}/manifests/1.0.0`, basic(acme))).status).toBe(200);
    const denied = await get(`/v2/${OTHER}/manifests/1.0.0`, bearer(acme));
    expect(denied.status).toBe(403);
    expect(await code(denied)).toBe('DENIED');
    expect((await get(`/v2/${REPO}/tags/list`, bearer(publish))).status).toBe(401);
    // A malformed percent-encoding is a 400, never a 5xx, with or without a credential.
    expect((await get('/v2/providers/registry.example.com/%E0%A4%A/x/tags/list', bearer(acme))).status).toBe(400);
    expect((await get('/v2/providers/registry.example.com/%E0%A4%A/x/tags/list')).status).toBe(401);
  });

  it('the private view serves no blob or manifest without a credential', async () => {
    const index = await (await get(`/v2/${REPO}/manifests/1.0.0`, bearer(acme))).json<{ manifests: { digest: string }[] }>();
    const digest = index.manifests[0]!.digest;
    expect((await get(`/v2/${REPO}/manifests/${digest}`)).status).toBe(401);
    expect((await get(`/v2/${REPO}/manifests/${digest}`, bearer(acme))).status).toBe(200);
    expect(env.ACCESS).toBe('private');
  });
});
