import { decodeJwt, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { ciActor, matchingPublishers, namesMatchButIdsDiffer, type CiActor, type CiClaims } from './ci-claims';
import { packageName, rightsAllow, type PackageRef } from './scope';
import { IssuerUnavailableError, issuerKeys, type IssuerKeyCache } from './issuer-keys';
import { transportCause, withJwksRetry } from './jwks-retry';
import { publisherRights, unpinnedReason, type TrustedPublisher } from './publishers';

/**
 * Verifying a CI job's OpenID Connect ID token (GitHub Actions, GitLab CI)
 * for a publish into one namespace, with jose — never by hand:
 *
 *   1. the token is a compact JWS whose header names RS256 or ES256 (never
 *      `none`, never an HMAC algorithm: no key confusion);
 *   2. its (still unverified) `iss` must be the issuer of one of the
 *      namespace's trusted publishers — nothing else is ever fetched;
 *   3. the signature verifies with the issuer's key named by `kid` (discovery
 *      + JWKS, cached, refetched on an unknown `kid`: issuer-keys.ts);
 *   4. `iss` equals that issuer, `aud` names this registry (its hostname,
 *      or `https://` + hostname), `exp`, `nbf` and `iat` hold with 30 s of skew,
 *      the token was issued at most MAX_TOKEN_AGE_SECONDS ago and carries a `jti`
 *      (publish-auth.ts lets each `jti` start one publish);
 *   5. the claims meet one of the namespace's publishers (ci-claims.ts) that
 *      is complete (pinned to ids, with its workflow, ref and packages:
 *      publishers.ts unpinnedReason) and whose packages include the one
 *      written (scope.ts).
 *
 * Every refusal is a CiTokenError saying why, carrying the actor the token
 * *claims* to be (unverified unless `reason` is 'no-publisher') for the audit
 * entry of the refusal. The token itself never appears in a message.
 */

export const CLOCK_SKEW_SECONDS = 30;
export const ALGORITHMS = ['RS256', 'ES256'];
/**
 * The oldest token accepted, by `iat`, whatever its `exp` says: GitHub's
 * tokens live minutes, GitLab's as long as the job (up to its timeout), so a
 * job publishes within an hour of asking for its token or asks again.
 */
export const MAX_TOKEN_AGE_SECONDS = 3600;
/** Longer than any real ID token (GitHub's are ~1 KB); refused before parsing. */
const MAX_TOKEN_LENGTH = 16 * 1024;

export type CiTokenRefusal =
  /** Not a compact JWT, or an algorithm other than RS256/ES256. */
  | 'malformed'
  /** `iss` is not the issuer of any trusted publisher of the namespace. */
  | 'untrusted-issuer'
  /** Bad signature, unknown `kid`, wrong `aud`/`iss`, `nbf`/`iat` in the future, a required claim missing. */
  | 'invalid'
  /** `exp` has passed. */
  | 'expired'
  /**
   * A genuine token, but of a repository, workflow, ref or environment no publisher of the namespace allows, or allowed
   * only by publishers not yet pinned, or by none that may write this package.
   */
  | 'no-publisher'
  /** The issuer's discovery or JWKS could not be fetched (not the caller's fault). */
  | 'issuer-unavailable';

export class CiTokenError extends Error {
  constructor(
    readonly reason: CiTokenRefusal,
    message: string,
    /** What the token claims (unverified unless reason is 'no-publisher'); null when it could not be decoded. */
    readonly claimed: CiActor | null,
  ) {
    super(message);
    this.name = 'CiTokenError';
  }
}

export interface VerifiedCiToken {
  publisher: TrustedPublisher;
  claims: CiClaims;
  actor: CiActor;
}

export interface VerifyCiTokenOptions {
  /** The namespace (for messages). */
  namespace: string;
  /** The package the request writes: a publisher must be allowed to write it. */
  pkg: PackageRef;
  /** The namespace's trusted publishers. */
  publishers: readonly TrustedPublisher[];
  /** This registry's hostname (REGISTRY_HOSTNAME); `aud` must be it or `https://` + it. */
  hostname: string;
  /** Time to check against (default now). */
  now?: Date;
  /** Issuer keys (default the isolate's cache). */
  keys?: IssuerKeyCache;
}

/** True when `token` has the shape of a compact JWS (three base64url parts): tells an ID token from an `ert_` token. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

/**
 * Verifies `token` as described above. Resolves with the matching publisher,
 * the verified claims and the audit actor; throws CiTokenError otherwise.
 */
export async function verifyCiToken(token: string, options: VerifyCiTokenOptions): Promise<VerifiedCiToken> {
  const { namespace, publishers, hostname, pkg } = options;
  const now = options.now ?? new Date();
  if (token.length > MAX_TOKEN_LENGTH || !looksLikeJwt(token)) {
    throw new CiTokenError('malformed', 'the bearer token is neither a publish token (ert_…) nor a CI ID token (a JWT)', null);
  }
  let unverified: CiClaims;
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(token).alg;
    unverified = decodeJwt(token);
  } catch {
    throw new CiTokenError('malformed', 'the CI ID token is not a readable JWT', null);
  }
  const claimed = ciActor(unverified, null);
  if (typeof alg !== 'string' || !ALGORITHMS.includes(alg)) {
    throw new CiTokenError('malformed', `the CI ID token is signed with ${JSON.stringify(alg)}; only ${ALGORITHMS.join(' and ')} are accepted`, claimed);
  }
  const issuer = typeof unverified.iss === 'string' ? unverified.iss : '';
  const candidates = publishers.filter((p) => p.issuer === issuer);
  if (candidates.length === 0) {
    throw new CiTokenError(
      'untrusted-issuer',
      `the CI ID token's issuer ${JSON.stringify(issuer)} is not trusted for namespace ${namespace}` +
        (publishers.length
          ? ` (trusted: ${[...new Set(publishers.map((p) => p.issuer))].join(', ')})`
          : ' (it has no trusted publishers: npm run publisher -- add)'),
      claimed,
    );
  }

  let claims: CiClaims;
  try {
    const getKey = await (options.keys ?? issuerKeys).keys(issuer, now.getTime());
    // A connection lost once while fetching the issuer's keys is retried once (jwks-retry.ts).
    ({ payload: claims } = await withJwksRetry(() =>
      jwtVerify(token, getKey, {
        issuer,
        audience: [hostname, `https://${hostname}`],
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['exp', 'iat', 'sub', 'jti'],
        maxTokenAge: MAX_TOKEN_AGE_SECONDS,
        currentDate: now,
      }),
    ));
  } catch (error) {
    throw refusal(error, issuer, hostname, claimed);
  }
  if (typeof claims.iat === 'number' && claims.iat > now.getTime() / 1000 + CLOCK_SKEW_SECONDS) {
    throw new CiTokenError('invalid', 'the CI ID token was issued in the future (iat); check the clocks', claimed);
  }
  const matching = matchingPublishers(claims, candidates);
  const complete = matching.filter((p) => unpinnedReason(p) === null);
  const publisher = complete.find((p) => rightsAllow(publisherRights(p, namespace), pkg, hostname)) ?? null;
  const actor = ciActor(claims, publisher ?? matching[0] ?? null);
  if (!publisher && complete.length > 0) {
    throw new CiTokenError(
      'no-publisher',
      `${describeRun(actor)} may not publish or change ${packageName(pkg)}: its trusted publisher${complete.length > 1 ? 's allow' : ' allows'} only ${complete
        .map((p) => publisherRights(p, namespace).packages.join(', '))
        .join('; ')} (the operator adds packages with npm run publisher -- add … --package ${packageName(pkg)})`,
      actor,
    );
  }
  if (!publisher && matching.length > 0) {
    const first = matching[0]!;
    throw new CiTokenError(
      'no-publisher',
      `${describeRun(actor)} matches trusted publisher ${first.id} of namespace ${namespace}, which publishes nothing until the operator pins it: ${unpinnedReason(first)} ` +
        `(npm run publisher -- pin ${first.id} --namespace ${namespace} …)`,
      actor,
    );
  }
  if (!publisher) {
    const renamed = candidates.some((p) => namesMatchButIdsDiffer(p, claims))
      ? ': its repository or project has the trusted name but not the trusted id (recreated, or moved to another owner); if that is intended, remove the publisher and add it again'
      : '';
    throw new CiTokenError(
      'no-publisher',
      `${describeRun(actor)} matches none of the trusted publishers of namespace ${namespace}${renamed} (npm run publisher -- list --namespace ${namespace})`,
      actor,
    );
  }
  return { publisher, claims, actor };
}

function refusal(error: unknown, issuer: string, hostname: string, claimed: CiActor): CiTokenError {
  if (error instanceof IssuerUnavailableError) return new CiTokenError('issuer-unavailable', error.message, claimed);
  if (error instanceof errors.JWTExpired) {
    if (error.claim === 'iat')
      return new CiTokenError(
        'expired',
        `the CI ID token was issued more than ${MAX_TOKEN_AGE_SECONDS / 60} minutes ago (iat), the most accepted whatever its exp; request a fresh one in the job`,
        claimed,
      );
    return new CiTokenError('expired', 'the CI ID token has expired; request a fresh one in the job', claimed);
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iat' && error.reason === 'check_failed')
      return new CiTokenError('invalid', 'the CI ID token was issued in the future (iat); check the clocks', claimed);
    const fix = error.claim === 'aud' ? ` (request it with audience ${hostname})` : '';
    return new CiTokenError('invalid', `the CI ID token's "${error.claim}" claim is not acceptable: ${error.reason}${fix}`, claimed);
  }
  if (error instanceof errors.JWKSNoMatchingKey) return new CiTokenError('invalid', `no key of ${issuer} matches the CI ID token's kid`, claimed);
  if (error instanceof errors.JWSSignatureVerificationFailed) return new CiTokenError('invalid', "the CI ID token's signature does not verify", claimed);
  if (
    error instanceof errors.JOSEAlgNotAllowed ||
    error instanceof errors.JWSInvalid ||
    error instanceof errors.JWTInvalid ||
    error instanceof errors.JOSENotSupported ||
    error instanceof errors.JWKSMultipleMatchingKeys
  ) {
    return new CiTokenError('invalid', `the CI ID token is not acceptable (${error.message})`, claimed);
  }
  // Fetching the JWKS failed (timeout, status, network): the issuer's problem, not the caller's.
  return new CiTokenError('issuer-unavailable', `the JWKS of ${issuer} could not be fetched, twice (${transportCause(error)}); try again later`, claimed);
}

function describeRun(actor: CiActor): string {
  const parts = [
    actor.repository && `repository ${actor.repository}`,
    actor.workflow && `workflow ${actor.workflow}`,
    actor.ref && `ref ${actor.ref}`,
    actor.environment && `environment ${actor.environment}`,
  ].filter(Boolean);
  return `the CI job (${parts.join(', ') || actor.subject})`;
}
