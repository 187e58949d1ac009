import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdTokenError, verifyIdToken } from '../../src/access/id-token';

/**
 * A JWKS fetch that loses its connection: a local HTTP server standing in
 * for the identity provider's JWKS endpoint destroys the socket of the first
 * `drops` requests. One lost connection is retried; two fail the sign-in
 * with the cause, not "it could not be checked".
 */
let server: Server;
let base: string;
let drops = 0;
let served = 0;
let privateKey: CryptoKey;
let jwk: JWK;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  privateKey = pair.privateKey;
  jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  server = createServer((request, response) => {
    served++;
    if (drops > 0) {
      drops--;
      request.socket.destroy(); // the connection is lost mid-request
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const ISSUER = 'https://idp.acme.example';
async function token(): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: ISSUER, aud: 'edge-registry', sub: 'alice', nonce: 'n', iat: now, exp: now + 300 })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .sign(privateKey);
}
const verify = async (path: string) =>
  verifyIdToken(await token(), { issuer: ISSUER, clientId: 'edge-registry', nonce: 'n', keys: createRemoteJWKSet(new URL(`${base}${path}`)) });

describe('a JWKS fetch that loses its connection', () => {
  it('once: retried, the sign-in succeeds', async () => {
    drops = 1;
    served = 0;
    expect((await verify('/once')).sub).toBe('alice');
    expect(served).toBe(2);
  });

  it('twice: refused with the cause named, not "it could not be checked"', async () => {
    drops = 2;
    served = 0;
    const error = await verify('/twice').then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(IdTokenError);
    expect((error as Error).message).toMatch(/the provider's key set \(JWKS\) could not be fetched, twice \(.+\)/);
    expect((error as Error).message).not.toMatch(/could not be checked/);
    expect(served).toBe(2);
  });

  it('a token that does not verify is not retried', async () => {
    drops = 0;
    served = 0;
    const [h, p] = (await token()).split('.');
    const error = await verifyIdToken(`${h}.${p}.AAAA`, {
      issuer: ISSUER,
      clientId: 'edge-registry',
      nonce: 'n',
      keys: createRemoteJWKSet(new URL(`${base}/bad`)),
    }).then(
      () => null,
      (e: unknown) => e,
    );
    expect((error as Error).message).toMatch(/signature does not verify|JWS/);
    expect(served).toBe(1);
  });
});
