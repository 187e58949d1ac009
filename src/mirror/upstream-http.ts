import { UpstreamError } from '../protocol/errors';
import { concatBytes } from '../bytes';

/**
 * The Worker's HTTP client for upstream registries (pull-through): follows a
 * few redirects itself (so a loop is noticed and named), times out, and reads
 * at most a bounded number of bytes of a JSON or SHA256SUMS body, so a hostile
 * or broken upstream can neither hang a request nor fill the isolate's memory.
 * No retries: the client's next request is the retry (nothing is stored on a
 * failure), which keeps the subrequests of one request bounded.
 *
 * Every failure is an UpstreamError (502) whose message names the URL and what
 * went wrong. Each fetch is counted in `counts` (the bench's subrequests).
 */

export { UpstreamError };

export interface UpstreamLimits {
  /** Time for the response headers of any request, and for the whole of a small body (ms). */
  timeoutMs: number;
  /** Time allowed between two chunks of an archive (ms). */
  idleMs: number;
  maxRedirects: number;
  maxJsonBytes: number;
  maxSmallFileBytes: number;
}

export const DEFAULT_LIMITS: UpstreamLimits = {
  timeoutMs: 10_000,
  idleMs: 30_000,
  maxRedirects: 5,
  maxJsonBytes: 8 * 1024 * 1024,
  maxSmallFileBytes: 1024 * 1024,
};

export class UpstreamClient {
  /** Requests made (every redirect hop counts: each is a subrequest). */
  readonly counts = { json: 0, small: 0, archive: 0, subrequests: 0 };

  // The runtime's fetch must be called unbound from an object (workerd: "Illegal invocation").
  constructor(readonly limits: UpstreamLimits = DEFAULT_LIMITS, private readonly fetcher: typeof fetch = (input, init) => fetch(input, init)) {}

  /**
   * GETs a JSON document. Resolves with the parsed body and the final URL
   * (relative URLs inside resolve against it). Throws UpstreamError for a
   * non-200 status (the message contains "HTTP <status>"), a timeout, a
   * redirect loop, a body over maxJsonBytes, or a body that is not JSON.
   */
  async getJson(url: string, what: string): Promise<{ json: unknown; url: string }> {
    this.counts.json++;
    const { bytes, url: finalUrl } = await this.getSmall(url, what, this.limits.maxJsonBytes, 'application/json');
    try {
      return { json: JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)), url: finalUrl };
    } catch (error) {
      throw new UpstreamError(`${what} ${finalUrl}: the body is not valid JSON (${(error as Error).message.slice(0, 100)})`);
    }
  }

  /** GETs a small file (SHA256SUMS, its signature); throws UpstreamError as getJson does. */
  async getFile(url: string, what: string): Promise<Uint8Array> {
    this.counts.small++;
    return (await this.getSmall(url, what, this.limits.maxSmallFileBytes, '*/*')).bytes;
  }

  /**
   * Opens an archive: the 200 response (after redirects) with its body
   * unread. The caller reads it through idleTimeout(). Throws UpstreamError
   * for a non-200 status, a timeout before the headers, or a redirect loop.
   */
  async openArchive(url: string, what: string): Promise<{ response: Response; url: string }> {
    this.counts.archive++;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.limits.timeoutMs);
    try {
      const opened = await this.follow(url, what, controller.signal, '*/*');
      return opened;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * GETs a modules.v1 download answer: 204 with its `X-Terraform-Get` (json
   * null), or 200 with a JSON body of at most maxJsonBytes (header null).
   * Throws UpstreamError as getJson does (any other status: "HTTP <status>").
   */
  async getModuleDownload(url: string, what: string): Promise<{ header: string | null; json: unknown; url: string }> {
    this.counts.json++;
    return this.withinTimeout(url, what, async (signal) => {
      const { response, url: finalUrl } = await this.follow(url, what, signal, 'application/json', [200, 204]);
      if (response.status === 204) {
        await response.body?.cancel();
        return { header: response.headers.get('x-terraform-get'), json: null, url: finalUrl };
      }
      const bytes = await readAtMost(response, this.limits.maxJsonBytes, `${what} ${finalUrl}`, signal);
      try {
        return { header: response.headers.get('x-terraform-get'), json: JSON.parse(new TextDecoder().decode(bytes)), url: finalUrl };
      } catch {
        return { header: response.headers.get('x-terraform-get'), json: null, url: finalUrl };
      }
    });
  }

  private getSmall(url: string, what: string, limit: number, accept: string): Promise<{ bytes: Uint8Array; url: string }> {
    return this.withinTimeout(url, what, async (signal) => {
      const { response, url: finalUrl } = await this.follow(url, what, signal, accept);
      const declared = Number(response.headers.get('content-length') ?? NaN);
      if (declared > limit) {
        await response.body?.cancel();
        throw new UpstreamError(`${what} ${finalUrl}: the body is ${declared} bytes, over the ${limit}-byte limit`);
      }
      return { bytes: await readAtMost(response, limit, `${what} ${finalUrl}`, signal), url: finalUrl };
    });
  }

  /** Runs `fetch` with a signal aborted after timeoutMs; an abort that surfaces as another error becomes UpstreamError 504 naming `url`. */
  private async withinTimeout<T>(url: string, what: string, fetch: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.limits.timeoutMs);
    try {
      return await fetch(controller.signal);
    } catch (error) {
      if (controller.signal.aborted && !(error instanceof UpstreamError)) {
        throw new UpstreamError(`${what} ${url}: timed out after ${this.limits.timeoutMs / 1000} s`, 504);
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private async follow(url: string, what: string, signal: AbortSignal, accept: string, ok: readonly number[] = [200]): Promise<{ response: Response; url: string }> {
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
      this.counts.subrequests++;
      let response: Response;
      try {
        response = await this.fetcher(current, { redirect: 'manual', signal, headers: { accept, 'user-agent': 'edge-registry-pull-through' } });
      } catch (error) {
        if (signal.aborted) throw new UpstreamError(`${what} ${current}: timed out after ${this.limits.timeoutMs / 1000} s`, 504);
        throw new UpstreamError(`${what} ${current}: ${(error as Error).message}`);
      }
      if ([301, 302, 303, 307, 308].includes(response.status)) {
        const location = response.headers.get('location');
        await response.body?.cancel();
        if (!location) throw new UpstreamError(`${what} ${current}: HTTP ${response.status} without a Location`);
        current = new URL(location, current).toString();
        continue;
      }
      if (!ok.includes(response.status)) {
        await response.body?.cancel();
        throw new UpstreamError(`${what} ${current}: HTTP ${response.status}`, 502, response.status);
      }
      return { response, url: current };
    }
  }
}

/** Reads a body up to `limit` bytes; throws UpstreamError beyond it (and stops reading). */
async function readAtMost(response: Response, limit: number, what: string, signal: AbortSignal): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    if (signal.aborted) {
      await reader.cancel();
      throw new UpstreamError(`${what}: timed out while reading the body`, 504);
    }
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw new UpstreamError(`${what}: the body is over the ${limit}-byte limit`);
    }
    chunks.push(value);
  }
  return concatBytes(chunks, total);
}
