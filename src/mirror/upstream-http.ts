import { UpstreamClient, UpstreamError, type UpstreamLimits } from '../http/upstream-client';

/**
 * The Worker's parameters for the one upstream client (src/http/upstream-client.ts),
 * used by pull-through and the module proxy: at most 5 redirects (each hop a
 * subrequest, counted), one deadline for the headers and a small body, and
 * no retries: the client's next request is the retry (nothing is stored on a
 * failure), which keeps the subrequests of one request bounded. No token is
 * sent upstream. Every failure is an UpstreamError (502, a timeout 504).
 */

export { UpstreamClient, UpstreamError, type UpstreamLimits };

export const DEFAULT_LIMITS: UpstreamLimits = {
  timeoutMs: 10_000,
  idleMs: 30_000,
  maxRedirects: 5,
  maxJsonBytes: 8 * 1024 * 1024,
  maxSmallFileBytes: 1024 * 1024,
  userAgent: 'edge-registry-pull-through',
  idleTimeout: false,
  retry: null,
};
