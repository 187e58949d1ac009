import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { constantTimeEqualText } from './crypto/bytes';
import { isJwksTransportFailure, transportCause, withJwksRetry } from './jwks-retry';

/**
 * Verification of the identity provider's ID token with `jose` (never by
 * hand): the signature against the provider's JWKS (the key named by `kid`;
 * the remote key set refetches on an unknown kid, rate-limited), only RS256
 * or ES256 (so `none` and HMAC key confusion are refused before any key is
 * used), `iss` equal to the configured issuer, `aud` containing our client id
 * (and `azp` equal to it when there are several audiences), `exp` and `nbf`
 * with CLOCK_SKEW_SECONDS of skew, `iat` not in the future beyond that skew,
 * and `nonce` equal to the one this login sent (constant time).
 */

export const ID_TOKEN_ALGORITHMS = ['RS256', 'ES256'];
export const CLOCK_SKEW_SECONDS = 60;

/** Why an ID token was refused; `message` is safe to show and log (never the token). */
export class IdTokenError extends Error {
  override name = 'IdTokenError';
}

export interface IdTokenClaims extends JWTPayload {
  sub: string;
  iss: string;
  iat: number;
  exp: number;
  email?: string;
  email_verified?: boolean;
  [claim: string]: unknown;
}

export interface IdTokenExpectations {
  issuer: string;
  clientId: string;
  nonce: string;
  /** The provider's keys (createRemoteJWKSet in the Worker; a local set in tests). */
  keys: JWTVerifyGetKey;
  now?: number;
}

/** Verifies `idToken`; resolves with its claims or throws IdTokenError saying which check failed. */
export async function verifyIdToken(idToken: string, expect: IdTokenExpectations): Promise<IdTokenClaims> {
  const now = expect.now ?? Date.now();
  let payload: JWTPayload;
  try {
    // A connection lost once while fetching the provider's keys is retried once (jwks-retry.ts).
    ({ payload } = await withJwksRetry(() =>
      jwtVerify(idToken, expect.keys, {
        issuer: expect.issuer,
        audience: expect.clientId,
        algorithms: ID_TOKEN_ALGORITHMS,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['sub', 'iat', 'exp', 'nonce'],
        currentDate: new Date(now),
      }),
    ));
  } catch (error) {
    throw new IdTokenError(`the identity provider's ID token was refused: ${describe(error)}`);
  }
  const claims = payload as IdTokenClaims;
  if (typeof claims.sub !== 'string' || claims.sub === '' || claims.sub.length > 255) throw new IdTokenError('the ID token has no usable "sub"');
  if (typeof claims.iat !== 'number' || claims.iat > now / 1000 + CLOCK_SKEW_SECONDS) throw new IdTokenError('the ID token was issued in the future ("iat")');
  if (Array.isArray(claims.aud) && claims.aud.length > 1 && claims.azp !== expect.clientId)
    throw new IdTokenError('the ID token has several audiences and "azp" is not this registry');
  if (typeof claims.nonce !== 'string' || !constantTimeEqualText(claims.nonce, expect.nonce))
    throw new IdTokenError('the ID token\'s "nonce" is not the one this login sent');
  return claims;
}

function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'it has expired ("exp")';
  if (error instanceof errors.JWTClaimValidationFailed) return `claim "${error.claim}" failed (${error.reason}): ${error.message}`;
  if (error instanceof errors.JOSEAlgNotAllowed) return 'its algorithm is not RS256 or ES256';
  if (error instanceof errors.JWKSNoMatchingKey) return 'no key of the provider matches its "kid"';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'its signature does not verify';
  if (isJwksTransportFailure(error))
    return `the provider's key set (JWKS) could not be fetched, twice (${transportCause(error)}); try again, and check the provider is reachable from Cloudflare`;
  if (error instanceof errors.JWKSInvalid) return "the provider's key set could not be read";
  if (error instanceof errors.JOSEError) return `${error.code}: ${error.message}`;
  return 'it could not be checked';
}
