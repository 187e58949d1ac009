import type { IRequest } from 'itty-router';
import { settings } from '../config';
import type { Env } from '../env';
import { SESSION_SECONDS, sessionCookie } from '../access/session';
import { base64url } from '../access/crypto/bytes';
import { sha256Hex } from '../protocol/hashes';
import { errorPage } from './respond';
import { safeNext } from './login';
import { storeLoginCode } from '../store/identity/login-codes';
import type { OidcSettings } from '../access/config';
import { clearFlowCookie, flowCookie, FLOW_SECONDS, readFlow, type LoginFlow } from '../access/flow';
import { CALLBACK_PATH, parseCliAuthzRequest } from '../access/login-v1';
import { evaluatePolicy, GROUP_SESSION_SECONDS, type LoginPolicy } from '../access/policy';
import { authorizationUrl, completeSignIn, newProviderRequest, ProviderError, SignInRefused } from '../access/provider';
import { sealPersonSession } from '../access/person-session';
import { recordLogin } from '../access/audit';

/**
 * The login broker's browser-facing steps (the token endpoint is in
 * token-endpoint.ts):
 *   GET /oauth/authorization  Terraform's request (login.v1 authz) → the provider
 *   GET /login/sso            a page sign-in → the provider
 *   GET /oauth/callback       the provider's answer → Terraform's redirect_uri with
 *                             a one-time code, or the page session cookie
 * Nothing is stored before the provider answers (the flow is a sealed
 * cookie); a successful CLI login stores one R2 object (the code).
 */

/** How long a one-time code may wait for Terraform's token request. */
export const CODE_SECONDS = 120;

type Ready = { oidc: OidcSettings; policy: LoginPolicy };

/** The sign-in configuration, or the page to answer: 404 without OIDC_ISSUER, 503 naming the problem (and a log line) when it is invalid. */
export async function readyOrPage(request: Request, env: Env): Promise<Ready | Response> {
  const host = new URL(request.url).host;
  const oidc = settings(env).oidc;
  if (oidc === null) return errorPage(request, host, 'Sign-in with an identity provider is not configured on this registry (OIDC_ISSUER).');
  const problem = oidc.problem;
  if (problem || !oidc.policy) {
    console.error(`sign-in is unavailable: ${problem}`);
    return errorPage(request, host, `Sign-in is unavailable: the registry's configuration is invalid — ${problem}. An operator must fix it.`, 503);
  }
  return { oidc, policy: oidc.policy };
}

function callbackUrl(request: Request): string {
  return new URL(CALLBACK_PATH, request.url).toString();
}

async function toProvider(request: Request, env: Env, ready: Ready, flow: Omit<LoginFlow, 'provider' | 'expiresAt'>): Promise<Response> {
  const providerRequest = newProviderRequest();
  let url: URL;
  try {
    url = await authorizationUrl(ready.oidc, callbackUrl(request), providerRequest);
  } catch (error) {
    return providerFailed(request, error);
  }
  const cookie = await flowCookie(env, { ...flow, provider: providerRequest, expiresAt: Date.now() + FLOW_SECONDS * 1000 });
  return new Response(null, { status: 302, headers: { location: url.toString(), 'set-cookie': cookie, 'cache-control': 'no-store' } });
}

function providerFailed(request: Request, error: unknown): Promise<Response> {
  if (!(error instanceof ProviderError)) throw error;
  console.error(`sign-in: ${error.message}`);
  return errorPage(
    request,
    new URL(request.url).host,
    `The identity provider could not be reached or answered something unexpected. Try again later. (${error.message})`,
    502,
  );
}

/** GET /oauth/authorization (login.v1 authz): 400 page for an invalid request (never a redirect to an unchecked URI), else 302 to the provider. */
export async function authorize(request: IRequest, env: Env): Promise<Response> {
  const ready = await readyOrPage(request, env);
  if (ready instanceof Response) return ready;
  const cli = parseCliAuthzRequest(new URL(request.url).searchParams);
  if ('error' in cli)
    return errorPage(request, new URL(request.url).host, `This sign-in request is invalid: ${cli.error}. Run terraform login (or tofu login) again.`, 400);
  return toProvider(request, env, ready, { kind: 'cli', cli });
}

/** GET /login/sso?next=PATH: a page sign-in with the identity provider. */
export async function pageSignIn(request: IRequest, env: Env): Promise<Response> {
  const ready = await readyOrPage(request, env);
  if (ready instanceof Response) return ready;
  return toProvider(request, env, ready, { kind: 'page', next: safeNext(new URL(request.url).searchParams.get('next')) });
}

/**
 * GET /oauth/callback: the provider's redirect. Refused with a page and
 * nothing issued when the state has no flow in this browser, the provider
 * reports an error, the code exchange or the ID token fails a check (4xx),
 * the provider is down or answers garbage (502), or the policy grants the
 * person nothing (403).
 */
export async function callback(request: IRequest, env: Env): Promise<Response> {
  const ready = await readyOrPage(request, env);
  if (ready instanceof Response) return ready;
  const url = new URL(request.url);
  const host = url.host;
  const state = url.searchParams.get('state') ?? '';
  const flow = await readFlow(request, env, state);
  if (flow === null) {
    return errorPage(request, host, 'This sign-in is unknown or has expired (its state does not match one this browser started). Start again.', 400);
  }
  const clear = { 'set-cookie': clearFlowCookie(state) };
  let claims;
  try {
    claims = await completeSignIn(ready.oidc, url, callbackUrl(request), flow.provider);
  } catch (error) {
    if (error instanceof SignInRefused) {
      console.warn(`sign-in refused: ${error.message}`);
      return withHeaders(await errorPage(request, host, `Sign-in failed: ${error.message}.`, 401), clear);
    }
    return withHeaders(await providerFailed(request, error), clear);
  }
  const person = { issuer: ready.oidc.issuer, subject: claims.sub, ...(typeof claims.email === 'string' ? { email: claims.email } : {}) };
  const grant = evaluatePolicy(ready.policy, claims);
  if (grant.scopes.length === 0) {
    console.warn(`sign-in refused by LOGIN_POLICY: no rule matches subject ${claims.sub} of ${ready.oidc.issuer}`);
    await recordLogin(env, person, 'refused', []);
    return withHeaders(
      await errorPage(
        request,
        host,
        `You signed in as ${person.email ?? person.subject}, but the registry's policy grants this account no access. Ask the registry's administrators.`,
        403,
      ),
      clear,
    );
  }
  await recordLogin(env, person, flow.kind === 'cli' ? 'cli' : 'page', grant.scopes);
  if (flow.kind === 'cli' && flow.cli) {
    const code = `erc_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
    await storeLoginCode(env.REGISTRY_R2, sha256Hex(code), {
      codeChallenge: flow.cli.codeChallenge,
      redirectUri: flow.cli.redirectUri,
      expiresAt: Date.now() + CODE_SECONDS * 1000,
      issuedAt: Date.now(),
      person,
      scopes: grant.scopes,
      tokenDays: ready.policy.tokenDays,
    });
    const target = new URL(flow.cli.redirectUri);
    target.searchParams.set('code', code);
    target.searchParams.set('state', flow.cli.state);
    return new Response(null, { status: 302, headers: { location: target.toString(), 'cache-control': 'no-store', ...clear } });
  }
  // A page session: never longer than SESSION_SECONDS after the provider issued the identity, and
  // GROUP_SESSION_SECONDS when its scopes come from groups (someone who leaves a group loses them within the hour).
  const now = Math.floor(Date.now() / 1000);
  const expires = Math.min(now, claims.iat) + (grant.fromGroups ? GROUP_SESSION_SECONDS : SESSION_SECONDS);
  const value = await sealPersonSession(env, { person, scopes: grant.scopes, admin: grant.admin, expires, issued: now });
  const headers = new Headers({ location: flow.next ?? '/', 'cache-control': 'no-store' });
  headers.append('set-cookie', clear['set-cookie']);
  headers.append('set-cookie', sessionCookie(value, expires));
  return new Response(null, { status: 303, headers });
}

function withHeaders(response: Response, headers: Record<string, string>): Response {
  const copy = new Response(response.body, response);
  for (const [name, value] of Object.entries(headers)) copy.headers.append(name, value);
  return copy;
}
