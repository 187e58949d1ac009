import { describe, expect, it } from 'vitest';
import { bearer, get, issueToken } from './helpers';

/** In private mode the download counts are the namespace's: the same read-token guard as its versions. */
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
});
