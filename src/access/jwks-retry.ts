import { errors } from 'jose';

/**
 * One retry when fetching an issuer's key set (JWKS) fails in transit — a
 * connection lost once (Cloudflare's "Network connection lost", a reset) or
 * a timeout — so a single hiccup does not fail a sign-in or a publish. Only
 * transport failures are retried: a token that does not verify fails at
 * once, and jose's own checks (signature, claims, kid) are never repeated.
 */

/** True when `error` is a failure to fetch the JWKS (network, timeout), not a verdict on the token. */
export function isJwksTransportFailure(error: unknown): boolean {
  if (error instanceof errors.JWKSTimeout) return true;
  return !(error instanceof errors.JOSEError) && error instanceof Error && !(error instanceof RangeError);
}

/** Runs `verify`; when it fails fetching the JWKS, runs it once more. Rethrows the last error. */
export async function withJwksRetry<T>(verify: () => Promise<T>): Promise<T> {
  try {
    return await verify();
  } catch (error) {
    if (!isJwksTransportFailure(error)) throw error;
    return verify();
  }
}

/** What a transport failure was, for a message that names the cause ("fetch failed: connection reset"). */
export function transportCause(error: unknown): string {
  if (error instanceof errors.JWKSTimeout) return 'the request timed out';
  const e = error as Error & { cause?: unknown };
  const cause = e.cause instanceof Error ? `: ${e.cause.message}` : '';
  return `${String(e?.message ?? error)}${cause}`.slice(0, 200);
}
