import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';

/**
 * The HTTP client for upstream registries: what Terraform's installer does
 * (follow a few redirects, time out, retry transient failures) with limits
 * that a hostile or broken upstream cannot push past. Node's fetch trusts the
 * system CAs plus NODE_EXTRA_CA_CERTS, so private CAs work as in any Node tool.
 *
 * Every failure is an UpstreamError whose message names the URL and what went
 * wrong; nothing here logs a token.
 */

// One error class for the CLI's and the Worker's upstream clients (src/mirror/upstream-http.ts), so the shared
// providers.v1 client (src/mirror/upstream.ts) recognises either's failures (by httpStatus, never by wording).
import { UpstreamError } from '../../../src/protocol/errors';
export { UpstreamError };

export interface UpstreamHttpOptions {
  /** Time allowed for the response headers, and between two body chunks (ms). Default 30 s. */
  timeoutMs?: number;
  /** Retries after the first attempt for 429, 5xx, timeouts and connection errors. Default 4. */
  retries?: number;
  /** First backoff (ms), doubled per attempt with jitter; Retry-After wins when given (capped by maxRetryAfterMs). */
  backoffMs?: number;
  /** Longest Retry-After honoured (ms). Default 60 s. */
  maxRetryAfterMs?: number;
  /** Largest JSON document accepted (bytes). Default 8 MiB. */
  maxJsonBytes?: number;
  /** Largest SHA256SUMS / signature accepted (bytes). Default 1 MiB. */
  maxSmallFileBytes?: number;
  /** Bearer token for a URL's host (registry API requests only), or undefined. */
  tokenFor?: (host: string) => string | undefined;
  /** Progress and retry notes (stderr in the CLI). */
  log?: (line: string) => void;
}

const MAX_REDIRECTS = 10;

/** Counters a caller (and the tests) can read: how many requests of each kind went upstream. */
export interface RequestCounts {
  json: number;
  small: number;
  archive: number;
}

export class UpstreamHttp {
  readonly counts: RequestCounts = { json: 0, small: 0, archive: 0 };
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly maxJsonBytes: number;
  private readonly maxSmallFileBytes: number;
  private readonly log: (line: string) => void;

  constructor(private readonly options: UpstreamHttpOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retries = options.retries ?? 4;
    this.backoffMs = options.backoffMs ?? 500;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    this.maxJsonBytes = options.maxJsonBytes ?? 8 * 1024 * 1024;
    this.maxSmallFileBytes = options.maxSmallFileBytes ?? 1024 * 1024;
    this.log = options.log ?? (() => {});
  }

  /**
   * GETs a JSON document (registry API: sends the host's token). Resolves with
   * the parsed body and the final URL (after redirects), against which
   * relative URLs inside it resolve. Throws UpstreamError for a non-200
   * status (404 included: the caller words it), a body over maxJsonBytes, or
   * a body that is not JSON.
   */
  async getJson(url: string, what: string): Promise<{ json: unknown; url: string; status: number }> {
    this.counts.json++;
    const { bytes, url: finalUrl } = await this.getSmall(url, what, this.maxJsonBytes, true);
    try {
      return { json: JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)), url: finalUrl, status: 200 };
    } catch (error) {
      throw new UpstreamError(`${what} ${finalUrl}: the body is not valid JSON (${(error as Error).message.slice(0, 100)})`);
    }
  }

  /** GETs a small release file (SHA256SUMS, its signature) without credentials, as Terraform does. */
  async getFile(url: string, what: string): Promise<Uint8Array> {
    this.counts.small++;
    return (await this.getSmall(url, what, this.maxSmallFileBytes, false)).bytes;
  }

  /**
   * Streams an archive into `path` (never held in memory), hashing it on the
   * way. Throws UpstreamError for a failed request, a body that stops, or one
   * larger than `maxBytes`. A retry after a partial body starts over.
   */
  async download(
    url: string,
    path: string,
    what: string,
    onProgress?: (bytes: number, total: number | null) => void,
    maxBytes = 4 * 1024 ** 3,
  ): Promise<{ sha256Hex: string; size: number }> {
    this.counts.archive++;
    return this.withRetries(url, what, false, async (response, finalUrl, signal, touch) => {
      const total = Number(response.headers.get('content-length') ?? NaN);
      if (Number.isFinite(total) && total > maxBytes) throw new UpstreamError(`${what} ${finalUrl}: ${total} bytes is over the ${maxBytes}-byte limit`);
      const hash = createHash('sha256');
      const out = createWriteStream(path);
      let size = 0;
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          touch();
          size += chunk.byteLength;
          if (size > maxBytes) throw new UpstreamError(`${what} ${finalUrl}: more than ${maxBytes} bytes`);
          hash.update(chunk);
          if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
          onProgress?.(size, Number.isFinite(total) ? total : null);
        }
        if (signal.aborted) throw signal.reason;
        await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
      } catch (error) {
        out.destroy();
        throw error;
      }
      if (Number.isFinite(total) && size !== total) throw new RetryableError(`${what} ${finalUrl}: got ${size} of ${total} bytes`);
      return { sha256Hex: hash.digest('hex'), size };
    });
  }

  private getSmall(url: string, what: string, limit: number, withToken: boolean): Promise<{ bytes: Uint8Array; url: string }> {
    return this.withRetries(url, what, withToken, async (response, finalUrl, _signal, touch) => {
      const declared = Number(response.headers.get('content-length') ?? NaN);
      if (Number.isFinite(declared) && declared > limit) {
        throw new UpstreamError(`${what} ${finalUrl}: the body is ${declared} bytes, over the ${limit}-byte limit for it`);
      }
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        touch();
        size += chunk.byteLength;
        if (size > limit) throw new UpstreamError(`${what} ${finalUrl}: the body is over the ${limit}-byte limit for it`);
        chunks.push(chunk);
      }
      // A fresh, exact buffer: a Buffer may be a view on a shared pool, which stores would send whole.
      return { bytes: new Uint8Array(Buffer.concat(chunks)), url: finalUrl };
    });
  }

  /**
   * One logical GET: follows redirects (at most 10, refusing loops), retries
   * transient failures with backoff, and hands a 200 response to `read`
   * (whose own failures marked RetryableError are retried too).
   */
  private async withRetries<T>(
    url: string,
    what: string,
    withToken: boolean,
    read: (response: Response, finalUrl: string, signal: AbortSignal, touch: () => void) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let retryAfterMs: number | null = null;
      let failure: string;
      const controller = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      const touch = () => {
        clearTimeout(timer);
        timer = setTimeout(() => controller.abort(new TimeoutError(`no data for ${this.timeoutMs / 1000} s`)), this.timeoutMs);
      };
      try {
        touch();
        const { response, finalUrl } = await this.follow(url, what, withToken, controller.signal);
        if (response.status === 200) {
          try {
            return await read(response, finalUrl, controller.signal, touch);
          } finally {
            clearTimeout(timer);
          }
        }
        await response.body?.cancel().catch(() => undefined);
        if (response.status !== 429 && response.status < 500) {
          const hint = response.status === 401 || response.status === 403 ? authHint(finalUrl, withToken && !!this.options.tokenFor?.(new URL(finalUrl).host)) : '';
          throw new UpstreamError(`${what} ${finalUrl}: HTTP ${response.status}${hint}`, 502, response.status);
        }
        failure = `HTTP ${response.status}`;
        retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      } catch (error) {
        clearTimeout(timer);
        if (error instanceof UpstreamError) throw error;
        const network = describeNetworkError(controller.signal.aborted ? controller.signal.reason : error);
        failure = network.text;
        // Trust problems do not go away by retrying: fail at once.
        if (!network.retryable) throw new UpstreamError(`${what} ${url}: ${failure}`);
      }
      clearTimeout(timer);
      if (attempt >= this.retries) {
        throw new UpstreamError(`${what} ${url}: ${failure} (gave up after ${attempt + 1} attempts); check that the upstream is reachable, or retry later`);
      }
      const backoff = this.backoffMs * 2 ** attempt * (0.75 + Math.random() / 2);
      const wait = retryAfterMs !== null ? Math.min(retryAfterMs, this.maxRetryAfterMs) : backoff;
      this.log(`  ${what} ${url}: ${failure}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${attempt + 2} of ${this.retries + 1})`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private async follow(url: string, what: string, withToken: boolean, signal: AbortSignal): Promise<{ response: Response; finalUrl: string }> {
    const seen = new Set<string>();
    let current = url;
    for (let hop = 0; ; hop++) {
      const target = new URL(current);
      if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new UpstreamError(`${what} ${current}: not an http(s) URL`);
      const headers: Record<string, string> = { 'user-agent': 'edge-registry-mirror', accept: 'application/json, */*' };
      const token = withToken ? this.options.tokenFor?.(target.host) : undefined;
      if (token) headers.authorization = `Bearer ${token}`;
      const response = await fetch(target, { headers, redirect: 'manual', signal });
      if (response.status < 300 || response.status >= 400 || response.status === 304) return { response, finalUrl: current };
      await response.body?.cancel().catch(() => undefined);
      const location = response.headers.get('location');
      if (!location) throw new UpstreamError(`${what} ${current}: HTTP ${response.status} without a Location`);
      seen.add(current);
      const next = new URL(location, current).toString();
      if (seen.has(next)) throw new UpstreamError(`${what} ${url}: redirect loop (${current} → ${next})`);
      if (hop + 1 >= MAX_REDIRECTS) throw new UpstreamError(`${what} ${url}: more than ${MAX_REDIRECTS} redirects`);
      current = next;
    }
  }
}

/** A failure while reading a 200 body that is worth another attempt (a short body). */
class RetryableError extends Error {}
class TimeoutError extends Error {}

/** What went wrong on the way to a response, and whether another attempt may help (not for an untrusted certificate). */
function describeNetworkError(error: unknown): { text: string; retryable: boolean } {
  if (error instanceof TimeoutError) return { text: `timed out (${error.message})`, retryable: true };
  if (error instanceof RetryableError) return { text: error.message, retryable: true };
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code ?? (error as { code?: string })?.code;
  if (code === 'ECONNREFUSED') return { text: 'connection refused', retryable: true };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { text: 'host not found', retryable: true };
  if (code && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) {
    return { text: `TLS certificate not trusted (${code}); add the upstream's CA with NODE_EXTRA_CA_CERTS=/path/ca.pem`, retryable: false };
  }
  return { text: `${code ?? 'connection failed'}${cause?.message ? ` (${cause.message})` : (error as Error)?.message ? ` (${(error as Error).message})` : ''}`, retryable: true };
}

function authHint(url: string, sentToken: boolean): string {
  const host = new URL(url).host;
  return sentToken
    ? ` (the token for ${host} was refused)`
    : ` (no credentials for ${host}: set TF_TOKEN_${host.replace(/\./g, '_').replace(/-/g, '__')} or a credentials "${host}" block in the Terraform CLI configuration)`;
}

/** Retry-After as delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
