import { beforeAll, describe, expect, it } from 'vitest';
import { createLocalJWKSet, exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import { base64url } from '../../../src/access/crypto/bytes';
import { IdTokenError, verifyIdToken } from '../../../src/access/id-token';
import { lastByteFlipped } from './helpers';

// The ID token check (jose): signature with the provider's key by kid, RS256/ES256 only, iss, aud (+azp), exp/nbf/iat
// with 60 s skew, nonce. Tokens here are made with the test's own keys (a provider's JWKS is just that).

const ISSUER = 'https://idp.acme.example';
const CLIENT = 'edge-registry';
const NONCE = 'n-0S6_WzA2Mj';
let rsa: CryptoKeyPair;
let ec: CryptoKeyPair;
let jwks: { keys: JWK[] };
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  rsa = await generateKeyPair('RS256', { extractable: true });
  ec = await generateKeyPair('ES256', { extractable: true });
  jwks = {
    keys: [
      { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(ec.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' },
    ],
  };
});

const claims = (extra: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: CLIENT,
  sub: 'alice',
  nonce: NONCE,
  iat: now(),
  exp: now() + 300,
  email: 'alice@acme.com',
  ...extra,
});
const sign = (payload: JWTPayload, key: CryptoKey = rsa.privateKey, header: { alg: string; kid?: string } = { alg: 'RS256', kid: 'rsa-1' }) =>
  new SignJWT(payload).setProtectedHeader(header).sign(key);
const verify = (token: string, nonce = NONCE) => verifyIdToken(token, { issuer: ISSUER, clientId: CLIENT, nonce, keys: createLocalJWKSet(jwks) });

async function refused(token: string, message: RegExp, nonce = NONCE): Promise<void> {
  const outcome = await verify(token, nonce).then(
    () => 'accepted',
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(IdTokenError);
  expect((outcome as Error).message).toMatch(message);
  if (token.length > 20) expect((outcome as Error).message).not.toContain(token);
}

const text = (value: unknown) => base64url(new TextEncoder().encode(JSON.stringify(value)));

describe('verifyIdToken', () => {
  it("accepts a token signed RS256 or ES256 by the provider's key, with its claims", async () => {
    expect((await verify(await sign(claims()))).sub).toBe('alice');
    expect((await verify(await sign(claims(), ec.privateKey, { alg: 'ES256', kid: 'ec-1' }))).email).toBe('alice@acme.com');
    expect((await verify(await sign(claims({ aud: [CLIENT, 'other'], azp: CLIENT })))).sub).toBe('alice');
    // Within the skew.
    expect((await verify(await sign(claims({ exp: now() - 30, iat: now() - 330 })))).sub).toBe('alice');
  });

  it('wrong aud', async () => refused(await sign(claims({ aud: 'someone-else' })), /"aud"/));
  it('several audiences without azp = us', async () => refused(await sign(claims({ aud: [CLIENT, 'other'] })), /several audiences/));
  it('wrong iss', async () => refused(await sign(claims({ iss: 'https://idp.evil.example' })), /"iss"/));
  it('iss differing only in its last character', async () => refused(await sign(claims({ iss: `${ISSUER.slice(0, -1)}X` })), /"iss"/));
  it('expired (beyond the skew)', async () => refused(await sign(claims({ exp: now() - 120, iat: now() - 600 })), /expired/));
  it('issued in the future (iat beyond the skew)', async () => refused(await sign(claims({ iat: now() + 600, exp: now() + 900 })), /iat|future/));
  it('not yet valid (nbf beyond the skew)', async () => refused(await sign(claims({ nbf: now() + 600 })), /nbf/));
  it('no nonce, another nonce, a nonce differing only in its last character', async () => {
    await refused(await sign(claims({ nonce: undefined })), /nonce/);
    await refused(await sign(claims({ nonce: 'another' })), /nonce/);
    await refused(await sign(claims({ nonce: `${NONCE.slice(0, -1)}k` })), /nonce/);
  });
  it('no sub', async () => refused(await sign(claims({ sub: undefined })), /sub/));

  it('alg none (an unsecured JWT)', async () => {
    const token = `${text({ alg: 'none', typ: 'JWT' })}.${text(claims())}.`;
    await refused(token, /algorithm|RS256/);
  });

  it("HS256 signed with the provider's public key as the HMAC secret (key confusion)", async () => {
    for (const secret of [await exportSPKI(rsa.publicKey), JSON.stringify(jwks.keys[0])]) {
      const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      await refused(await sign(claims(), key, { alg: 'HS256', kid: 'rsa-1' }), /algorithm|RS256/);
    }
  });

  it('an algorithm outside RS256/ES256 even with a real key (RS384, PS256)', async () => {
    const rs384 = await generateKeyPair('RS384', { extractable: true });
    await refused(await sign(claims(), rs384.privateKey, { alg: 'RS384', kid: 'rsa-1' }), /algorithm/);
  });

  it('an unknown kid, and a key of another issuer under a known kid', async () => {
    await refused(await sign(claims(), rsa.privateKey, { alg: 'RS256', kid: 'rsa-2' }), /kid/);
    const stranger = await generateKeyPair('RS256');
    await refused(await sign(claims(), stranger.privateKey, { alg: 'RS256', kid: 'rsa-1' }), /signature/);
  });

  it('a tampered payload under the original signature', async () => {
    const [header, , signature] = (await sign(claims())).split('.');
    await refused(`${header}.${text(claims({ sub: 'admin', groups: ['registry-admins'] }))}.${signature}`, /signature/);
  });

  it('a signature differing only in its last byte (RS256 and ES256)', async () => {
    for (const token of [await sign(claims()), await sign(claims(), ec.privateKey, { alg: 'ES256', kid: 'ec-1' })]) {
      const [header, payload, signature] = token.split('.');
      await refused(`${header}.${payload}.${lastByteFlipped(signature!)}`, /signature/);
    }
  });

  it('garbage', async () => {
    for (const token of ['', 'a.b.c', 'not a jwt', `${text({ alg: 'RS256' })}.${text('x')}.`]) await refused(token, /refused/);
  });
});
