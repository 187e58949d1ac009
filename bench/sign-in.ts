import * as oauth from 'oauth4webapi';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { Env } from '../src/env';
import { base64url, constantTimeEqualText } from '../src/access/crypto/bytes';
import { newToken, tokenSha256 } from '../src/access/tokens';
import { sha256Hex } from '../src/protocol/hashes';
import { flowCookie, readFlow } from '../src/access/flow';
import { verifyIdToken } from '../src/access/id-token';
import { parseCliAuthzRequest } from '../src/access/login-v1';
import { evaluatePolicy, parsePolicy } from '../src/access/policy';
import { newProviderRequest } from '../src/access/provider';
import { seal, unseal } from '../src/access/crypto/seal';
import { settings } from '../src/config';

/**
 * `npm run bench:sign-in`: the Worker CPU of each sign-in step's own work — the same functions the handlers run
 * (request checks, sealing and opening cookies, oauth4webapi's processing of the provider's token answer, jose's
 * RS256 ID-token verification, the policy, PKCE, minting the token) — in Node's V8 and WebCrypto, without the I/O
 * (KV, R2, the provider), which Workers do not bill as CPU. First call (cold isolate: key imports and derivations)
 * and the mean of the next ones.
 */
const N = Number(process.env.BENCH_N ?? 300);
const env = { URL_SIGNING_SECRET: 'bench-signing-secret-0123456789abcdef', REGISTRY_HOSTNAME: 'registry.example.com' } as Env;
const config = settings(env);
const policy = parsePolicy(
  JSON.stringify({
    rules: [
      { if: { groups: 'platform' }, scopes: ['*'] },
      { if: { email_domain: 'acme.com' }, scopes: ['acme'] },
    ],
    admins: { groups: 'registry-admins' },
  }),
);
const issuer = 'https://idp.acme.example';
const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
const keys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256' }] });
const as: oauth.AuthorizationServer = { issuer, token_endpoint: `${issuer}/token`, id_token_signing_alg_values_supported: ['RS256'] };
const client: oauth.Client = { client_id: 'edge-registry' };

const authzQuery = new URLSearchParams({
  response_type: 'code',
  client_id: 'terraform-cli',
  redirect_uri: 'http://localhost:10000/login',
  state: 'terraform-state',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  code_challenge_method: 'S256',
});

async function authzStep(): Promise<{ cookie: string; state: string; nonce: string }> {
  const cli = parseCliAuthzRequest(authzQuery);
  if ('error' in cli) throw new Error(cli.error);
  const provider = newProviderRequest();
  await oauth.calculatePKCECodeChallenge(provider.codeVerifier);
  const cookie = await flowCookie(env, { kind: 'cli', cli, provider, expiresAt: Date.now() + 600_000 });
  return { cookie: cookie.split(';')[0]!, state: provider.state, nonce: provider.nonce };
}

async function callbackStep(input: { cookie: string; state: string; idTokenBody: string; nonce: string }): Promise<void> {
  const flow = await readFlow(new Request('https://r/', { headers: { cookie: input.cookie } }), env, input.state);
  if (!flow) throw new Error('no flow');
  const result = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    new Response(input.idTokenBody, { headers: { 'content-type': 'application/json' } }),
    { expectedNonce: input.nonce, requireIdToken: true },
  );
  const claims = await verifyIdToken(result.id_token!, { issuer, clientId: 'edge-registry', nonce: input.nonce, keys });
  const grant = evaluatePolicy(policy, claims);
  const code = `erc_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
  JSON.stringify({ hash: sha256Hex(code), scopes: grant.scopes, person: { issuer, subject: claims.sub } });
}

async function tokenStep(verifier: string, challenge: string): Promise<void> {
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code: `erc_${'A'.repeat(43)}`,
    code_verifier: verifier,
    client_id: 'terraform-cli',
    redirect_uri: 'http://localhost:10000/login',
  });
  sha256Hex(form.get('code')!);
  const computed = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(form.get('code_verifier')!))));
  if (!constantTimeEqualText(computed, challenge)) throw new Error('pkce');
  const token = newToken();
  JSON.stringify({ sha256: tokenSha256(token), scopes: ['*'], expires: new Date().toISOString() });
}

async function pageStep(): Promise<void> {
  // The cookie's crypto (the per-request R2 head of the offboarding marker is I/O).
  const value = await seal(config, 'person-session', {
    person: { issuer, subject: 'alice', email: 'alice@acme.com' },
    scopes: ['*'],
    admin: false,
    expires: Math.floor(Date.now() / 1000) + 3600,
    issued: Math.floor(Date.now() / 1000),
  });
  if (!(await unseal(config, 'person-session', value))) throw new Error('session');
}

async function idTokenBody(nonce: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const idToken = await new SignJWT({
    iss: issuer,
    aud: 'edge-registry',
    sub: 'alice',
    nonce,
    iat: now,
    exp: now + 300,
    email: 'alice@acme.com',
    email_verified: true,
    groups: ['platform'],
  })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .sign(privateKey);
  return JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 300, id_token: idToken });
}

function cpuMs(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

async function measure(name: string, prepare: () => Promise<() => Promise<unknown>>): Promise<void> {
  let run = await prepare();
  let start = process.cpuUsage();
  await run();
  const first = cpuMs(start);
  const runs: (() => Promise<unknown>)[] = [];
  for (let i = 0; i < N; i++) runs.push(await prepare());
  start = process.cpuUsage();
  for (run of runs) await run();
  const mean = cpuMs(start) / N;
  console.log(`${name.padEnd(46)} first ${first.toFixed(2).padStart(6)} ms   mean ${mean.toFixed(3).padStart(6)} ms`);
}

console.log(`sign-in: Worker CPU per step (Node ${process.version}, ${N} runs; I/O excluded)`);
await measure('GET /oauth/authorization (check, seal flow)', async () => authzStep);
await measure('GET /oauth/callback (unseal, token answer, RS256)', async () => {
  const flow = await authzStep();
  const body = await idTokenBody(flow.nonce);
  return () => callbackStep({ ...flow, idTokenBody: body });
});
await measure('POST /oauth/token (PKCE, mint token)', async () => {
  const verifier = oauth.generateRandomCodeVerifier();
  const challenge = await oauth.calculatePKCECodeChallenge(verifier);
  return () => tokenStep(verifier, challenge);
});
await measure('page session (seal at sign-in, open per page)', async () => pageStep);
