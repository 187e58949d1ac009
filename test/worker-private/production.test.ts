import { beforeAll, describe, expect, it } from 'vitest';
import { base64url } from '../../src/access/crypto/bytes';
import { tokenSha256 } from '../../src/access/tokens';
import { sha256Hex } from '../../src/protocol/hashes';
import { storeLoginCode } from '../../src/store/identity/login-codes';
import { deleteTokenRecord } from '../../src/store/tokens/write';
import { at, production } from '../worker/production/scenario';
import { address, bearer, env, fakeRelease, issueToken, seed } from './helpers';
import { oidcEnv, pkce } from './identity/helpers';

// Private mode under the production harness (docs/production-rules.md).
// Rule: KV is cached per location for cacheTtl (60 s) — a revoked token is refused at every location within
// 60 s (the agreed bound, docs/private.md), and at once where its record was never read.
// Rule: one write a second per key, daily write budget — 50 sign-ins in a minute each write their own token key.

const VERSIONS = '/v1/providers/acme/prodthing/versions';

beforeAll(async () => {
  await seed([fakeRelease(address('acme', 'prodthing'), '1.0.0', ['linux_amd64'])]);
});

describe('a read token revoked while in use', () => {
  it('is refused at every location within 60 seconds of the revocation, and at once where it was never read', async () => {
    const p = production();
    const { token, record } = await issueToken(['acme']);
    for (const location of ['A', 'B']) expect((await at(p, location, VERSIONS, bearer(token))).status).toBe(200);
    p.clock.advance(30_000);
    // Revoked (npm run token -- revoke: the KV REST API, from no Cloudflare location).
    await p.run('CLI', (e) => deleteTokenRecord(e.REGISTRY_KV, record.sha256), 'revoke', { limited: false });
    expect((await at(p, 'C', VERSIONS, bearer(token))).status).toBe(401);
    const allowedUntil: Record<string, number> = {};
    for (let t = 0; t <= 60_000; t += 5_000) {
      for (const location of ['A', 'B']) {
        const status = (await at(p, location, VERSIONS, bearer(token))).status;
        expect([200, 401]).toContain(status);
        if (status === 200) allowedUntil[location] = t;
      }
      if (t < 60_000) p.clock.advance(5_000);
    }
    // Still accepted from the locations' copies for a while (KV's cacheTtl), never 60 s after the revocation.
    // (A and B read the record 30 s before the revocation, so their copies last until 30 s after it.)
    for (const location of ['A', 'B']) expect(allowedUntil[location]).toBe(25_000);
    for (const location of ['A', 'B', 'C']) expect((await at(p, location, VERSIONS, bearer(token))).status).toBe(401);
    expect(p.failures()).toEqual([]);
  }, 120_000);
});

describe('50 sign-ins within a minute', () => {
  it('each gets a token that works at every location at once; nothing fails, one KV write each', async () => {
    const p = production({
      vars: { INDEX_CACHE_SECONDS: '0', OIDC_ISSUER: 'http://127.0.0.1:9', OIDC_CLIENT_ID: 'edge-registry', LOGIN_POLICY: oidcEnv().LOGIN_POLICY! },
    });
    const redirect = 'http://localhost:10003/login';
    const person = { issuer: 'http://127.0.0.1:9', subject: 'many-sub', email: 'many@acme.com' };
    const tokens: string[] = [];
    for (let i = 0; i < 50; i++) {
      const { verifier, challenge } = await pkce();
      const code = `erc_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
      await storeLoginCode(env.REGISTRY_R2, sha256Hex(code), {
        codeChallenge: challenge,
        issuedAt: Date.now(),
        redirectUri: redirect,
        expiresAt: Date.now() + 600_000,
        person: { ...person, subject: `many-sub-${i % 5}` },
        scopes: ['acme'],
        tokenDays: 7,
      });
      const body = new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: 'terraform-cli',
        redirect_uri: redirect,
        code,
        code_verifier: verifier,
      }).toString();
      const response = await at(p, `L${i % 3}`, '/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
      expect(response.status, response.text).toBe(200);
      tokens.push((JSON.parse(response.text) as { access_token: string }).access_token);
      p.clock.advance(1_200);
    }
    const signIns = p.invocations.filter((i) => i.path === '/oauth/token');
    expect(signIns.every((i) => i.counts.kvWrites === 1)).toBe(true);
    for (const token of tokens) for (const location of ['L0', 'L1', 'L2']) expect((await at(p, location, VERSIONS, bearer(token))).status).toBe(200);
    expect(new Set(tokens.map(tokenSha256)).size).toBe(50);
    expect(p.failures()).toEqual([]);
    expect([...p.kv.refusedWrites]).toEqual([]);
  }, 120_000);
});
