import { describe, expect, it } from 'vitest';
import { bearer, issueToken } from './helpers';
import { exports } from 'cloudflare:workers';

// Least privilege between the two kinds of token: a publish token reads nothing (the publish API's side,
// a read token never publishing, is test/worker/publish/providers.test.ts).

const get = (path: string, init?: RequestInit) => exports.default.fetch(new Request(new URL(path, 'https://registry.example.com'), init));

describe('a publish token', () => {
  it('is refused by the read API (401, invalid_token), while a read token of the same scope reads', async () => {
    const publish = await issueToken(['acme'], { purpose: 'publish' });
    const refused = await get('/v1/providers/acme/thing/versions', bearer(publish.token));
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="edge-registry", error="invalid_token"');
    expect(((await refused.json()) as { errors: string[] }).errors[0]).toMatch(/this is a publish token: it only publishes/);
    const read = await issueToken(['acme']);
    expect((await get('/v1/providers/acme/thing/versions', bearer(read.token))).status).toBe(404);
  });

  it('cannot sign in to the pages', async () => {
    const publish = await issueToken(['acme'], { purpose: 'publish' });
    const response = await get('/login', {
      method: 'POST',
      headers: { origin: 'https://registry.example.com', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: publish.token }).toString(),
      redirect: 'manual',
    });
    expect(response.headers.get('set-cookie') ?? '').not.toMatch(/__Host-session=[^;]/);
  });
});
