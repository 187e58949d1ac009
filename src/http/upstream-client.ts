import { concatBytes } from '../bytes';
import { UpstreamError } from '../protocol/errors';
import { describeNetworkError, NetworkFailure, parseRetryAfter, TimeoutFailure, TransientUpstreamFailure } from './upstream-failures';

/**
 * The one HTTP client for upstream registries, used by the Worker's
 * pull-through and module proxy (src/mirror/upstream-http.ts sets its
 * parameters) and by the CLI's `mirror sync` (scripts/lib/mirror/upstream-http.ts).
 * Web fetch and web streams only, so it runs in Node and in workerd.
 *
 * What it does for every request: follows redirects itself (at most
 * maxRedirects, a loop named; every hop counted in `counts.subrequests`),
 * times out, reads small bodies up to a limit, parses JSON, and turns every
 * failure into an UpstreamError whose message names the URL (a non-2xx status
 * carries it in `httpStatus`). What differs between callers is a parameter:
 * `retry` (the CLI retries 429, 5xx, timeouts and network errors with backoff
 * and Retry-After; the Worker does not: the client's next request is the
 * retry), `tokenFor` (the CLI sends a host's token to registry APIs; the
 * Worker sends none), `idleTimeout` (the CLI's timer restarts on every chunk;
 * the Worker's is one deadline for headers and a small body). Nothing here
 * logs a token.
 */

export { UpstreamError };
export { TransientUpstreamFailure, parseRetryAfter };

/** Retries for transient failures: 429, 5xx, timeouts, network errors other than an untrusted certificate. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** First backoff (ms), doubled per attempt with jitter; Retry-After wins when given (capped by maxRetryAfterMs). */
  backoffMs: number;
  maxRetryAfterMs: number;
  /** A note per retry (stderr in the CLI). */
  log: (line: string) => void;
}

export interface UpstreamLimits {
  /** Time for the response headers; with idleTimeout, also between two body chunks; without, also for a whole small body (ms). */
  timeoutMs: number;
  /** Time allowed between two chunks of an archive the caller reads itself (ms). */
  idleMs: number;
  /** Redirects followed per request. */
  maxRedirects: number;
  maxJsonBytes: number;
  maxSmallFileBytes: number;
  userAgent: string;
  /** true: timeoutMs restarts with every chunk ("no data for N s"); false: one deadline ("timed out after N s", 504). */
  idleTimeout: boolean;
  /** null: no retries, a failure is thrown at once. */
  retry: RetryPolicy | null;
  /** Bearer token for a host (registry API requests only), or none sent. */
  tokenFor?: (host: string) => string | undefined;
  /** Text added to a 401/403 message (what credentials to set). */
  authHint?: (url: string, sentToken: boolean) => string;
}

/** What a reader gets besides the response: the attempt's signal, and `touch` to say data arrived (restarts an idle timer). */
export interface ReadContext {
  signal: AbortSignal;
  touch: () => void;
}

export interface RequestOptions {
  accept: string;
  /** Send tokenFor's token for the host (registry API requests). */
  withToken: boolean;
  /** Statuses handed to the reader; any other is an UpstreamError (or a retry). */
  ok?: readonly number[];
  /**
   * Called with every URL before it is requested — the first and each redirect
   * hop — so a rule about where bytes may come from (https only) holds for the
   * whole chain, not only its ends; it throws (an UpstreamError) to refuse.
   */
  checkHop?: (url: string) => void;
}

const REDIRECTS = [301, 302, 303, 307, 308];

export class UpstreamClient {
  /** Requests made (every redirect hop counts in subrequests: each is a Worker subrequest). */
  readonly counts = { json: 0, small: 0, archive: 0, subrequests: 0 };

  // The runtime's fetch must be called unbound from an object (workerd: "Illegal invocation").
  constructor(
    readonly limits: UpstreamLimits,
    private readonly fetcher: typeof fetch = (input, init) => fetch(input, init),
  ) {}

  /**
   * GETs a JSON document (sends the host's token when tokenFor gives one).
   * Resolves with the parsed body and the final URL (relative URLs inside
   * resolve against it). Throws UpstreamError for a non-200 status (the
   * message contains "HTTP <status>"), a timeout, a redirect loop, a body
   * over maxJsonBytes, or a body that is not JSON.
   */
  async getJson(url: string, what: string): Promise<{ json: unknown; url: string }> {
    this.counts.json++;
    const { bytes, url: finalUrl } = await this.getSmall(url, what, this.limits.maxJsonBytes, { accept: 'application/json', withToken: true });
    try {
      return { json: JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)), url: finalUrl };
    } catch (error) {
      throw new UpstreamError(`${what} ${finalUrl}: the body is not valid JSON (${(error as Error).message.slice(0, 100)})`);
    }
  }

  /** GETs a small release file (SHA256SUMS, its signature) without credentials, as Terraform does; throws UpstreamError as getJson does. */
  async getFile(url: string, what: string): Promise<Uint8Array> {
    this.counts.small++;
    return (await this.getSmall(url, what, this.limits.maxSmallFileBytes, { accept: '*/*', withToken: false })).bytes;
  }

  /**
   * GETs a modules.v1 download answer: 204 with its `X-Terraform-Get` (json
   * null), or 200 with a JSON body of at most maxJsonBytes (header null when
   * absent; json null when the body is not JSON). Throws UpstreamError as
   * getJson does (any other status: "HTTP <status>").
   */
  async getModuleDownload(url: string, what: string): Promise<{ header: string | null; json: unknown; url: string }> {
    this.counts.json++;
    return this.request(url, what, { accept: 'application/json', withToken: true, ok: [200, 204] }, async (response, finalUrl, context) => {
      const header = response.headers.get('x-terraform-get');
      if (response.status === 204) {
        await response.body?.cancel();
        return { header, json: null, url: finalUrl };
      }
      const bytes = await this.readAtMost(response, this.limits.maxJsonBytes, `${what} ${finalUrl}`, context);
      try {
        return { header, json: JSON.parse(new TextDecoder().decode(bytes)), url: finalUrl };
      } catch {
        return { header, json: null, url: finalUrl };
      }
    });
  }

  /**
   * Opens an archive without credentials: the 200 response (after redirects)
   * with its body unread; the caller reads it with its own idle timer
   * (limits.idleMs). `checkHop` sees every URL of the chain before it is
   * requested (RequestOptions.checkHop). Throws UpstreamError for a non-200
   * status, a timeout before the headers, a redirect loop, or what checkHop throws.
   */
  async openArchive(url: string, what: string, checkHop?: (url: string) => void): Promise<{ response: Response; url: string }> {
    this.counts.archive++;
    return this.request(url, what, { accept: '*/*', withToken: false, ...(checkHop ? { checkHop } : {}) }, async (response, finalUrl) => ({
      response,
      url: finalUrl,
    }));
  }

  /**
   * Fetches an archive and hands the 200 response to `read` while the timer
   * still runs (call context.touch() per chunk). Under a retry policy a
   * failed read (a timeout, a TransientUpstreamFailure) starts over with a
   * new request. Counted as an archive.
   */
  async readArchive<T>(url: string, what: string, read: (response: Response, finalUrl: string, context: ReadContext) => Promise<T>): Promise<T> {
    this.counts.archive++;
    return this.request(url, what, { accept: '*/*', withToken: false }, read);
  }

  private getSmall(url: string, what: string, limit: number, options: RequestOptions): Promise<{ bytes: Uint8Array; url: string }> {
    return this.request(url, what, options, async (response, finalUrl, context) => {
      const declared = Number(response.headers.get('content-length') ?? NaN);
      if (declared > limit) {
        await response.body?.cancel();
        throw new UpstreamError(`${what} ${finalUrl}: the body is ${declared} bytes, over the ${limit}-byte limit`);
      }
      return { bytes: await this.readAtMost(response, limit, `${what} ${finalUrl}`, context), url: finalUrl };
    });
  }

  /** Reads a body up to `limit` bytes; throws UpstreamError beyond it (and stops reading). */
  private async readAtMost(response: Response, limit: number, what: string, context: ReadContext): Promise<Uint8Array> {
    if (!response.body) return new Uint8Array();
    const reader = response.body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      if (context.signal.aborted) {
        await reader.cancel().catch(() => undefined);
        throw context.signal.reason;
      }
      const { done, value } = await reader.read();
      if (done) break;
      context.touch();
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => undefined);
        throw new UpstreamError(`${what}: the body is over the ${limit}-byte limit`);
      }
      chunks.push(value);
    }
    // A fresh, exact buffer (never a view on a shared pool, which stores would send whole).
    return concatBytes(chunks, total);
  }

  /**
   * One logical GET: follows redirects, hands a response with an `ok` status
   * to `read`, and under a retry policy retries transient failures (429, 5xx,
   * timeouts, network errors, a TransientUpstreamFailure from `read`) with
   * backoff. An UpstreamError from `read` is never retried.
   */
  async request<T>(
    url: string,
    what: string,
    options: RequestOptions,
    read: (response: Response, finalUrl: string, context: ReadContext) => Promise<T>,
  ): Promise<T> {
    const retry = this.limits.retry;
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => controller.abort(new TimeoutFailure(this.timeoutText())), this.limits.timeoutMs);
      };
      const touch = this.limits.idleTimeout ? arm : () => {};
      let failure: { text: string; status: number; httpStatus?: number; retryAfterMs: number | null };
      try {
        arm();
        const { response, finalUrl, sentToken } = await this.follow(url, what, options, controller.signal);
        if ((options.ok ?? [200]).includes(response.status)) return await read(response, finalUrl, { signal: controller.signal, touch });
        await response.body?.cancel().catch(() => undefined);
        const status = response.status;
        if (!retry || (status !== 429 && status < 500)) {
          const hint = (status === 401 || status === 403) && this.limits.authHint ? this.limits.authHint(finalUrl, sentToken) : '';
          throw new UpstreamError(`${what} ${finalUrl}: HTTP ${status}${hint}`, 502, status);
        }
        failure = { text: `HTTP ${status}`, status: 502, httpStatus: status, retryAfterMs: parseRetryAfter(response.headers.get('retry-after')) };
      } catch (error) {
        if (error instanceof UpstreamError) throw error;
        const cause = controller.signal.aborted ? controller.signal.reason : error;
        const network = cause instanceof NetworkFailure ? cause : describeNetworkError(url, cause);
        if (!retry || !network.retryable) throw new UpstreamError(`${what} ${network.url}: ${network.text}`, network.status);
        failure = { text: network.text, status: network.status, retryAfterMs: null };
      } finally {
        clearTimeout(timer);
      }
      if (!retry || attempt >= retry.retries) {
        throw new UpstreamError(
          `${what} ${url}: ${failure.text} (gave up after ${attempt + 1} attempts); check that the upstream is reachable, or retry later`,
          failure.status,
          failure.httpStatus,
        );
      }
      const backoff = retry.backoffMs * 2 ** attempt * (0.75 + Math.random() / 2);
      const wait = failure.retryAfterMs !== null ? Math.min(failure.retryAfterMs, retry.maxRetryAfterMs) : backoff;
      retry.log(`  ${what} ${url}: ${failure.text}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${attempt + 2} of ${retry.retries + 1})`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private timeoutText(): string {
    return this.limits.idleTimeout ? `timed out (no data for ${this.limits.timeoutMs / 1000} s)` : `timed out after ${this.limits.timeoutMs / 1000} s`;
  }

  private async follow(
    url: string,
    what: string,
    options: RequestOptions,
    signal: AbortSignal,
  ): Promise<{ response: Response; finalUrl: string; sentToken: boolean }> {
    let current = url;
    const seen = new Set<string>();
    for (let hop = 0; ; hop++) {
      let parsed: URL;
      try {
        parsed = new URL(current);
      } catch {
        throw new UpstreamError(`${what}: ${current} is not a URL`);
      }
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new UpstreamError(`${what}: ${current}: only http(s) URLs are fetched`);
      if (seen.has(current)) throw new UpstreamError(`${what} ${url}: redirect loop (${[...seen].join(' → ')} → ${current})`);
      if (hop > this.limits.maxRedirects) throw new UpstreamError(`${what} ${url}: more than ${this.limits.maxRedirects} redirects`);
      seen.add(current);
      options.checkHop?.(current);
      const headers: Record<string, string> = { accept: options.accept, 'user-agent': this.limits.userAgent };
      const token = options.withToken ? this.limits.tokenFor?.(parsed.host) : undefined;
      if (token) headers.authorization = `Bearer ${token}`;
      this.counts.subrequests++;
      let response: Response;
      try {
        response = await this.fetcher(current, { redirect: 'manual', signal, headers });
      } catch (error) {
        throw signal.aborted ? signal.reason : describeNetworkError(current, error);
      }
      if (REDIRECTS.includes(response.status)) {
        const location = response.headers.get('location');
        await response.body?.cancel().catch(() => undefined);
        if (!location) throw new UpstreamError(`${what} ${current}: HTTP ${response.status} without a Location`);
        current = new URL(location, current).toString();
        continue;
      }
      return { response, finalUrl: current, sentToken: !!token };
    }
  }
}
