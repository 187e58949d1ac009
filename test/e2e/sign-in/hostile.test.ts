import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get } from '../http';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from '../server';
import { startHostileIdp, type HostileIdp, type HostileMode } from './hostile-idp';

/**
 * The broker against a misbehaving identity provider, through the whole
 * path as deployed (wrangler dev over HTTPS; oauth4webapi and jose in the
 * Worker): every broken ID token, a provider answering garbage and a
 * provider that goes down are refused with a page — never a code sent to
 * Terraform's redirect_uri — and nothing secret appears in the Worker's log.
 */
const CLIENT_SECRET = 'hostile-test-client-secret-value';
let dir: string;
let certificate: Certificate;
let server: DevServer;
let idp: HostileIdp;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-hostile-'));
  certificate = makeCertificate(dir);
  idp = await startHostileIdp(await freePort(), 'edge-registry');
  idp.mode = 'discovery-garbage'; // the first thing the Worker sees of this provider
  server = await startDevServer({
    stateDir: join(dir, 'state'),
    port: await freePort(),
    certificate,
    vars: {
      ACCESS: 'private',
      URL_SIGNING_SECRET: 'hostile-signing-secret-0123456789abcdef',
      OIDC_ISSUER: idp.issuer,
      OIDC_CLIENT_ID: 'edge-registry',
      OIDC_CLIENT_SECRET: CLIENT_SECRET,
      LOGIN_POLICY: JSON.stringify({ rules: [{ if: { groups: 'platform' }, scopes: ['acme'] }] }),
    },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await idp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const AUTHZ = `/oauth/authorization?${new URLSearchParams({
  response_type: 'code',
  client_id: 'terraform-cli',
  redirect_uri: 'http://localhost:10000/login',
  state: 'terraform-state',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  code_challenge_method: 'S256',
})}`;

/** Terraform's browser: authz → provider → callback (with the flow cookie). Returns the callback's answer. */
async function login(): Promise<{ status: number; location: string | undefined; body: string }> {
  const start = await get(`${server.origin}${AUTHZ}`, { ca: certificate.pem });
  if (start.status !== 302) return { status: start.status, location: undefined, body: start.body.toString() };
  const cookie = String(start.headers['set-cookie']).split(';')[0]!;
  const atProvider = await get(String(start.headers.location));
  expect(atProvider.status).toBe(302);
  const back = await get(String(atProvider.headers.location), { ca: certificate.pem, headers: { cookie } });
  return { status: back.status, location: back.headers.location as string | undefined, body: back.body.toString() };
}

describe('a misbehaving identity provider', () => {
  it('answering garbage to discovery: 502 page, nothing issued (and the failure is not cached)', async () => {
    const first = await login();
    expect(first.status).toBe(502);
    expect(first.location).toBeUndefined();
    expect(first.body).toContain('answered something unexpected');
    idp.mode = 'discovery-500';
    expect((await login()).status).toBe(502);
  });

  it("the well-behaved control: a code goes to Terraform's listener", async () => {
    idp.mode = 'good';
    const ok = await login();
    expect(ok.status).toBe(302);
    expect(ok.location).toMatch(/^http:\/\/localhost:10000\/login\?code=erc_[A-Za-z0-9_-]{43}&state=terraform-state$/);
  });

  const refusals: [HostileMode, number, RegExp][] = [
    ['wrong-aud', 401, /aud/],
    ['wrong-iss', 401, /iss/],
    ['expired', 401, /exp/],
    ['future-iat', 401, /iat|future/],
    ['wrong-nonce', 401, /nonce/],
    ['alg-none', 401, /alg/i],
    ['hs256-public-key', 401, /alg/i],
    ['unknown-kid', 401, /kid|key/],
    ['tampered', 401, /signature/],
    ['token-error', 401, /refused the code exchange/],
    ['token-garbage', 502, /answered something unexpected/],
  ];
  for (const [mode, status, reason] of refusals) {
    it(`an ID token or answer that is ${mode}: ${status}, no code for Terraform`, async () => {
      idp.mode = mode;
      const refused = await login();
      expect(refused.status, refused.body.slice(0, 2000)).toBe(status);
      expect(refused.location).toBeUndefined();
      expect(refused.body).not.toContain('erc_');
      const message = /<p class="lead">([^<]*)<\/p>/.exec(refused.body)?.[1] ?? '';
      console.log(`${mode}: ${refused.status} ${message}`);
      expect(message).toMatch(reason);
    });
  }

  it('going down mid-login: 502, no code', async () => {
    idp.mode = 'good';
    const start = await get(`${server.origin}${AUTHZ}`, { ca: certificate.pem });
    const cookie = String(start.headers['set-cookie']).split(';')[0]!;
    const atProvider = await get(String(start.headers.location));
    await idp.stop();
    const back = await get(String(atProvider.headers.location), { ca: certificate.pem, headers: { cookie } });
    expect(back.status).toBe(502);
    expect(back.headers.location).toBeUndefined();
  });

  it('the Worker logged no ID token, client secret or registry code', () => {
    const log = server.log();
    expect(idp.issued.length).toBeGreaterThan(5);
    for (const token of idp.issued) expect(log).not.toContain(token.split('.')[2] || token.split('.')[1]!);
    expect(log).not.toContain(CLIENT_SECRET);
    expect(log).not.toMatch(/erc_[A-Za-z0-9_-]{43}/);
    expect(log).not.toContain('hostile-access-token');
  });
});
