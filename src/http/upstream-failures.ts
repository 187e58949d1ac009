/**
 * How the upstream client (upstream-client.ts) names a failure on the way to a response, and whether another
 * attempt may help; and when the upstream asks to wait (Retry-After).
 */

/** A failure while reading a 200 body that another attempt may cure (a short body); retried under a retry policy. */
export class TransientUpstreamFailure extends Error {}

/** A timeout (the abort reason of an attempt's signal). */
export class TimeoutFailure extends Error {}

/** What went wrong on the way to a response, at which URL, and whether another attempt may help. */
export class NetworkFailure extends Error {
  constructor(
    readonly url: string,
    readonly text: string,
    readonly retryable: boolean,
    readonly status = 502,
  ) {
    super(text);
  }
}

/** Names a failed fetch or read: a timeout (504), a short body, a refused or unknown host, an untrusted certificate (never retried). */
export function describeNetworkError(url: string, error: unknown): NetworkFailure {
  if (error instanceof NetworkFailure) return error;
  if (error instanceof TimeoutFailure) return new NetworkFailure(url, error.message, true, 504);
  if (error instanceof TransientUpstreamFailure) return new NetworkFailure(url, error.message, true);
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code ?? (error as { code?: string })?.code;
  if (code === 'ECONNREFUSED') return new NetworkFailure(url, 'connection refused', true);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new NetworkFailure(url, 'host not found', true);
  if (code && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) {
    return new NetworkFailure(url, `TLS certificate not trusted (${code}); add the upstream's CA with NODE_EXTRA_CA_CERTS=/path/ca.pem`, false);
  }
  // workerd's fetch errors carry neither code nor cause: their message is the text.
  if (!code && !cause) return new NetworkFailure(url, (error as Error)?.message ?? String(error), true);
  return new NetworkFailure(
    url,
    `${code ?? 'connection failed'}${cause?.message ? ` (${cause.message})` : (error as Error)?.message ? ` (${(error as Error).message})` : ''}`,
    true,
  );
}

/** Retry-After as delay-seconds or an HTTP date (ms); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
