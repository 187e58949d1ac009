/**
 * Terraform's login protocol (`login.v1`, see
 * /work/shared/reference/identity-and-ci.md): what discovery advertises and
 * the checks on the CLI's authorization request. Pure functions: no I/O.
 */

/** The OAuth client id Terraform/OpenTofu present (public client, no secret). */
export const LOGIN_CLIENT_ID = 'terraform-cli';
/** The inclusive range of loopback ports the CLI may listen on (≥ 10 ports at 10000+, as recommended). */
export const LOGIN_PORTS: readonly [number, number] = [10000, 10010];
export const AUTHZ_PATH = '/oauth/authorization';
export const TOKEN_PATH = '/oauth/token';
/** Where the identity provider sends the browser back (register ORIGIN + this at the provider). */
export const CALLBACK_PATH = '/oauth/callback';

/** The `login.v1` discovery entry (relative URLs: the CLI resolves them against the discovery document). */
export function loginV1Service() {
  return { client: LOGIN_CLIENT_ID, grant_types: ['authz_code'], authz: AUTHZ_PATH, token: TOKEN_PATH, ports: [...LOGIN_PORTS] };
}

/** Terraform's validated authorization request. */
export interface CliAuthzRequest {
  redirectUri: string;
  state: string;
  codeChallenge: string;
}

/** A 43-character base64url S256 challenge (RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is always 43 characters). */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** RFC 7636 §4.1 code_verifier: 43..128 unreserved characters. */
export const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
/** `state`: opaque to us, printable ASCII, bounded so it fits in the sealed cookie. */
const STATE = /^[\x21-\x7e]{1,512}$/;

/**
 * True for `http://localhost:PORT/login` or `http://127.0.0.1:PORT/login`
 * with PORT in LOGIN_PORTS, spelled exactly so (no user info, query,
 * fragment, other path, default port or leading zeros): the only places a
 * one-time code may ever be sent.
 */
export function isCliRedirectUri(value: string): boolean {
  const match = /^http:\/\/(localhost|127\.0\.0\.1):([1-9][0-9]{3,4})\/login$/.exec(value);
  if (!match) return false;
  const port = Number(match[2]);
  return port >= LOGIN_PORTS[0] && port <= LOGIN_PORTS[1];
}

/**
 * Validates the CLI's GET AUTHZ_PATH query. Returns the request, or
 * { error } with the reason (the handler answers 400 with a page, never a
 * redirect: an unchecked redirect_uri must not receive anything). A
 * parameter given twice is refused (ambiguous).
 */
export function parseCliAuthzRequest(params: URLSearchParams): CliAuthzRequest | { error: string } {
  for (const name of ['response_type', 'client_id', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method']) {
    if (params.getAll(name).length > 1) return { error: `${name} is given more than once` };
  }
  const redirectUri = params.get('redirect_uri') ?? '';
  if (!isCliRedirectUri(redirectUri)) {
    return { error: `redirect_uri must be http://localhost:PORT/login or http://127.0.0.1:PORT/login with PORT from ${LOGIN_PORTS[0]} to ${LOGIN_PORTS[1]}` };
  }
  if (params.get('client_id') !== LOGIN_CLIENT_ID) return { error: `client_id must be "${LOGIN_CLIENT_ID}"` };
  if (params.get('response_type') !== 'code') return { error: 'response_type must be "code"' };
  const method = params.get('code_challenge_method');
  if (method !== 'S256') return { error: 'PKCE is required: code_challenge_method must be S256 (plain is refused)' };
  const codeChallenge = params.get('code_challenge') ?? '';
  if (!CHALLENGE.test(codeChallenge)) return { error: 'code_challenge must be the 43-character base64url SHA-256 of the code verifier' };
  const state = params.get('state') ?? '';
  if (!STATE.test(state)) return { error: 'state is required (1 to 512 printable characters)' };
  return { redirectUri, state, codeChallenge };
}
