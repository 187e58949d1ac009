import * as oauth from 'oauth4webapi';
import { createRemoteJWKSet, type JWTVerifyGetKey } from 'jose';
import type { OidcSettings } from './config';
import { IdTokenError, verifyIdToken, type IdTokenClaims } from './id-token';

/**
 * The registry as an OpenID Connect client of the organisation's identity
 * provider, with oauth4webapi: discovery (cached per isolate for an hour;
 * a failure is not cached), the authorization URL (code flow, PKCE S256,
 * state, nonce), and the server-side code exchange; the ID token it returns
 * is then verified with jose against the provider's JWKS (id-token.ts).
 */

/** The provider could not be used: down, or answering something that is not OpenID Connect. A 502 page. */
export class ProviderError extends Error {
  override name = 'ProviderError';
}

interface Provider {
  as: oauth.AuthorizationServer;
  keys: JWTVerifyGetKey;
  at: number;
}

const DISCOVERY_TTL_MS = 3600_000;
const TIMEOUT_MS = 10_000;
const providers = new Map<string, Provider>();

function options(oidc: OidcSettings) {
  return { [oauth.allowInsecureRequests]: oidc.insecureLoopback, signal: AbortSignal.timeout(TIMEOUT_MS) };
}

/** The provider's metadata and key set (isolate cache). Throws ProviderError when discovery fails or its issuer differs. */
export async function provider(oidc: OidcSettings, now = Date.now()): Promise<Provider> {
  const cached = providers.get(oidc.issuer);
  if (cached && now - cached.at < DISCOVERY_TTL_MS) return cached;
  let as: oauth.AuthorizationServer;
  try {
    const issuer = new URL(oidc.issuer);
    const response = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...options(oidc) });
    as = await oauth.processDiscoveryResponse(issuer, response);
  } catch (error) {
    throw new ProviderError(`the identity provider's discovery (${oidc.issuer}/.well-known/openid-configuration) failed: ${reason(error)}`);
  }
  if (!as.authorization_endpoint || !as.token_endpoint || !as.jwks_uri) {
    throw new ProviderError("the identity provider's discovery lacks authorization_endpoint, token_endpoint or jwks_uri");
  }
  const keys = createRemoteJWKSet(new URL(as.jwks_uri), { timeoutDuration: TIMEOUT_MS, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
  const entry = { as, keys, at: now };
  providers.set(oidc.issuer, entry);
  return entry;
}

/** Forget cached provider metadata (tests that restart a provider). */
export function forgetProviders(): void {
  providers.clear();
}

export interface ProviderRequest {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** A fresh state, nonce and PKCE verifier for one login. */
export function newProviderRequest(): ProviderRequest {
  return { state: oauth.generateRandomState(), nonce: oauth.generateRandomNonce(), codeVerifier: oauth.generateRandomCodeVerifier() };
}

/** Where to send the browser: the provider's authorization endpoint with our client id, callback, scopes, state, nonce and S256 challenge. */
export async function authorizationUrl(oidc: OidcSettings, callback: string, request: ProviderRequest): Promise<URL> {
  const { as } = await provider(oidc);
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', oidc.clientId);
  url.searchParams.set('redirect_uri', callback);
  url.searchParams.set('scope', 'openid email profile');
  url.searchParams.set('state', request.state);
  url.searchParams.set('nonce', request.nonce);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(request.codeVerifier));
  url.searchParams.set('code_challenge_method', 'S256');
  return url;
}

/** The provider refused the sign-in (the person cancelled, or an OAuth error came back) or its answer failed a check. A 4xx page. */
export class SignInRefused extends Error {
  override name = 'SignInRefused';
}

/**
 * Handles the provider's redirect to our callback: checks `state` (oauth4webapi,
 * against the sealed one), exchanges the code server-side with our PKCE
 * verifier (and client secret if configured), then verifies the ID token
 * with jose. Throws SignInRefused (state mismatch, an OAuth error, a refused
 * ID token) or ProviderError (the provider is down or answers garbage).
 */
export async function completeSignIn(oidc: OidcSettings, callbackUrl: URL, callback: string, request: ProviderRequest): Promise<IdTokenClaims> {
  const { as, keys } = await provider(oidc);
  const client: oauth.Client = { client_id: oidc.clientId };
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(as, client, callbackUrl, request.state);
  } catch (error) {
    throw new SignInRefused(`the identity provider's answer was refused: ${reason(error)}`);
  }
  const methods = as.token_endpoint_auth_methods_supported;
  const auth =
    oidc.clientSecret === ''
      ? oauth.None()
      : methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
        ? oauth.ClientSecretPost(oidc.clientSecret)
        : oauth.ClientSecretBasic(oidc.clientSecret);
  let idToken: string | undefined;
  try {
    const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, callback, request.codeVerifier, options(oidc));
    const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: request.nonce, requireIdToken: true });
    idToken = result.id_token;
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) throw new SignInRefused(`the identity provider refused the code exchange: ${error.error}`);
    if (error instanceof oauth.OperationProcessingError && /JWT|nonce|iss|aud|exp|iat|claim|alg/i.test(error.message)) {
      throw new SignInRefused(`the identity provider's ID token was refused: ${error.message}`);
    }
    throw new ProviderError(`the identity provider's token endpoint failed: ${reason(error)}`);
  }
  if (!idToken) throw new SignInRefused('the identity provider returned no ID token');
  try {
    return await verifyIdToken(idToken, { issuer: oidc.issuer, clientId: oidc.clientId, nonce: request.nonce, keys });
  } catch (error) {
    if (error instanceof IdTokenError) throw new SignInRefused(error.message);
    throw error;
  }
}

/** A short reason for a log line or page; never a token or secret (oauth4webapi's and fetch's messages carry neither). */
function reason(error: unknown): string {
  if (error instanceof oauth.AuthorizationResponseError) return `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`;
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 300);
  return 'unknown error';
}
