import type { IRequest } from 'itty-router';
import { settings } from '../config';
import type { Env } from '../env';
import { base64url, constantTimeEqualText } from './crypto/bytes';
import { sha256Hex } from '../protocol/hashes';
import { redeemLoginCode } from '../store/identity/login-codes';
import { revokedSince } from '../store/identity/person-tokens';
import { issuePersonToken } from './issue';
import { LOGIN_CLIENT_ID, VERIFIER } from './login-v1';
import { recordTokenEvent } from './audit';
import { readTextAtMost } from '../http/body';
import { InputError } from '../protocol/errors';

/**
 * POST /oauth/token (login.v1 token): Terraform exchanges the one-time code
 * and its PKCE code_verifier for a read token. RFC 6749 §5 answers: 200
 * {"access_token","token_type":"bearer","expires_in"} or 400
 * {"error","error_description"} (413 for a body over 8 KiB, refused while it
 * streams: src/http/body.ts), never cached. The code is claimed before
 * anything else is checked, so a failed attempt (wrong verifier, other
 * redirect_uri, expired) burns it: nothing is issued and it cannot be
 * retried; so does an admin's "revoke all" of the person after the code was
 * issued. Storage: R2 get + conditional put + delete (the code), one R2
 * head (the person's revocation), then one KV write (the token record) and
 * one R2 write (the person's index).
 */

const CODE = /^erc_[A-Za-z0-9_-]{43}$/;
/** A code, a verifier, a redirect URI and the rest fit in far less; a larger body is refused while it streams (413). */
const MAX_BODY_BYTES = 8192;

function oauthError(status: number, error: string, description: string): Response {
  return new Response(JSON.stringify({ error, error_description: description }), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', pragma: 'no-cache' },
  });
}

export async function tokenEndpoint(request: IRequest, env: Env): Promise<Response> {
  const now = Date.now();
  const oidc = settings(env).oidc;
  if (oidc === null) return oauthError(404, 'invalid_request', 'sign-in is not configured on this registry');
  if (oidc.problem || !oidc.policy) return oauthError(503, 'temporarily_unavailable', "sign-in is unavailable: the registry's configuration is invalid");
  if (request.method !== 'POST') return oauthError(405, 'invalid_request', 'use POST');
  const type = request.headers.get('content-type') ?? '';
  if (!type.toLowerCase().startsWith('application/x-www-form-urlencoded'))
    return oauthError(400, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
  let form: URLSearchParams;
  try {
    form = new URLSearchParams(await readTextAtMost(request, MAX_BODY_BYTES));
  } catch (error) {
    if (error instanceof InputError && error.status === 413) return oauthError(413, 'invalid_request', error.message);
    return oauthError(400, 'invalid_request', 'the body could not be read');
  }
  for (const name of ['grant_type', 'code', 'code_verifier', 'client_id', 'redirect_uri']) {
    if (form.getAll(name).length > 1) return oauthError(400, 'invalid_request', `${name} is given more than once`);
  }
  if (form.get('grant_type') !== 'authorization_code') return oauthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code');
  if (form.get('client_id') !== LOGIN_CLIENT_ID) return oauthError(400, 'invalid_client', `client_id must be "${LOGIN_CLIENT_ID}"`);
  const code = form.get('code') ?? '';
  const verifier = form.get('code_verifier') ?? '';
  if (!CODE.test(code)) return oauthError(400, 'invalid_grant', 'the code is not a code of this registry');
  if (!VERIFIER.test(verifier)) return oauthError(400, 'invalid_grant', 'code_verifier is missing or malformed (PKCE is required)');
  const record = await redeemLoginCode(env.REGISTRY_R2, sha256Hex(code));
  if (record === null) return oauthError(400, 'invalid_grant', 'the code is unknown, expired or already used');
  if (record.expiresAt <= now) return oauthError(400, 'invalid_grant', 'the code has expired; run login again');
  // Offboarding: an admin's "revoke all" of this person after the code was issued makes it worthless (one R2 head).
  if (await revokedSince(env.REGISTRY_R2, record.person, record.issuedAt))
    return oauthError(400, 'invalid_grant', "an administrator revoked this person's access after the code was issued; run login again");
  if (!constantTimeEqualText(form.get('redirect_uri') ?? '', record.redirectUri))
    return oauthError(400, 'invalid_grant', 'redirect_uri differs from the authorization request');
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  if (!constantTimeEqualText(challenge, record.codeChallenge)) return oauthError(400, 'invalid_grant', 'code_verifier does not match the code_challenge');
  const { token, record: tokenRecord } = await issuePersonToken(env.REGISTRY_KV, env.REGISTRY_R2, {
    person: record.person,
    scopes: record.scopes,
    days: record.tokenDays,
    name: `terraform login (${record.person.email ?? record.person.subject})`,
    now,
  });
  await recordTokenEvent(env, record.person, 'token.create', { id: tokenRecord.id, scopes: tokenRecord.scopes, owner: record.person });
  return new Response(JSON.stringify({ access_token: token, token_type: 'bearer', expires_in: record.tokenDays * 86_400 }), {
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', pragma: 'no-cache' },
  });
}
