import { describe, expect, it } from 'vitest';
import { bearer, get, issueToken } from './helpers';

/** In private mode the download counts (and a module's lifecycle JSON) are the namespace's: the same read-token guard as its versions. */
describe('GET /v1/downloads/… in private mode', () => {
  it('needs a read token whose scope covers the namespace', async () => {
    expect((await get('/v1/downloads/providers/acme/thing')).status).toBe(401);
    expect((await get('/v1/downloads/modules/acme/vpc/aws')).status).toBe(401);
    const { token: other } = await issueToken(['other']);
    expect((await get('/v1/downloads/providers/acme/thing', bearer(other))).status).toBe(403);
    const { token } = await issueToken(['acme']);
    const response = await get('/v1/downloads/providers/acme/thing', bearer(token));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toMatch(/^private/);
    expect((await get('/v1/downloads/modules/acme/vpc/aws', bearer(token))).status).toBe(200);
  });

  it("a mirrored provider's counts need a token for its upstream address; a module's lifecycle JSON one for the module's namespace", async () => {
    expect((await get('/v1/downloads/mirror/registry.terraform.io/hashicorp/aws')).status).toBe(401);
    const { token: acme } = await issueToken(['acme']);
    expect((await get('/v1/downloads/mirror/registry.terraform.io/hashicorp/aws', bearer(acme))).status).toBe(403);
    const { token: upstream } = await issueToken(['registry.terraform.io/hashicorp']);
    const mirrored = await get('/v1/downloads/mirror/registry.terraform.io/hashicorp/aws', bearer(upstream));
    expect(mirrored.status).toBe(200);
    expect(mirrored.headers.get('cache-control')).toMatch(/^private/);
    expect((await get('/v1/lifecycle/modules/acme/vpc/aws')).status).toBe(401);
    const { token: other } = await issueToken(['other']);
    expect((await get('/v1/lifecycle/modules/acme/vpc/aws', bearer(other))).status).toBe(403);
    const lifecycle = await get('/v1/lifecycle/modules/acme/vpc/aws', bearer(acme));
    expect(lifecycle.status).toBe(200);
    expect(lifecycle.headers.get('cache-control')).toMatch(/^private/);
  });
});
