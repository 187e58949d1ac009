import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { TransientUpstreamFailure, UpstreamClient, UpstreamError, parseRetryAfter } from '../../../src/http/upstream-client';

/**
 * The CLI's upstream client (`mirror sync`): the one client of
 * src/http/upstream-client.ts with the CLI's parameters (what Terraform's
 * installer does: follow up to 10 redirects, retry 429, 5xx, timeouts and
 * network errors with backoff and Retry-After, send a host's token to its
 * registry API) and what only the CLI does: stream an archive into a file,
 * hashing it on the way. Node's fetch trusts the system CAs plus
 * NODE_EXTRA_CA_CERTS, so private CAs work as in any Node tool.
 *
 * Every failure is an UpstreamError whose message names the URL and what went
 * wrong; nothing here logs a token.
 */

export { UpstreamError, parseRetryAfter };

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

/** Counters a caller (and the tests) can read: how many requests of each kind went upstream. */
export interface RequestCounts {
  json: number;
  small: number;
  archive: number;
}

export class UpstreamHttp {
  private readonly client: UpstreamClient;

  constructor(options: UpstreamHttpOptions = {}) {
    const timeoutMs = options.timeoutMs ?? 30_000;
    this.client = new UpstreamClient({
      timeoutMs,
      idleMs: timeoutMs,
      maxRedirects: 10,
      maxJsonBytes: options.maxJsonBytes ?? 8 * 1024 * 1024,
      maxSmallFileBytes: options.maxSmallFileBytes ?? 1024 * 1024,
      userAgent: 'edge-registry-mirror',
      idleTimeout: true,
      retry: {
        retries: options.retries ?? 4,
        backoffMs: options.backoffMs ?? 500,
        maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
        log: options.log ?? (() => {}),
      },
      tokenFor: options.tokenFor,
      authHint,
    });
  }

  /** Requests of each kind that went upstream (the sync summary's upstream_requests). */
  get counts(): RequestCounts {
    const { json, small, archive } = this.client.counts;
    return { json, small, archive };
  }

  /**
   * GETs a JSON document (registry API: sends the host's token). Resolves with
   * the parsed body and the final URL (after redirects), against which
   * relative URLs inside it resolve. Throws UpstreamError for a non-200
   * status (404 included: the caller words it), a body over maxJsonBytes, or
   * a body that is not JSON.
   */
  async getJson(url: string, what: string): Promise<{ json: unknown; url: string; status: number }> {
    return { ...(await this.client.getJson(url, what)), status: 200 };
  }

  /** GETs a small release file (SHA256SUMS, its signature) without credentials, as Terraform does. */
  getFile(url: string, what: string): Promise<Uint8Array> {
    return this.client.getFile(url, what);
  }

  /**
   * Streams an archive into `path` (never held in memory), hashing it on the
   * way. Throws UpstreamError for a failed request, a body that stops, or one
   * larger than `maxBytes`. A retry after a partial body starts over.
   */
  download(
    url: string,
    path: string,
    what: string,
    onProgress?: (bytes: number, total: number | null) => void,
    maxBytes = 4 * 1024 ** 3,
  ): Promise<{ sha256Hex: string; size: number }> {
    return this.client.readArchive(url, what, async (response, finalUrl, { signal, touch }) => {
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
      if (Number.isFinite(total) && size !== total) throw new TransientUpstreamFailure(`${what} ${finalUrl}: got ${size} of ${total} bytes`);
      return { sha256Hex: hash.digest('hex'), size };
    });
  }
}

/** What to set when a 401/403 came back: the refused token, or where Terraform's credentials go. */
function authHint(url: string, sentToken: boolean): string {
  const host = new URL(url).host;
  return sentToken
    ? ` (the token for ${host} was refused)`
    : ` (no credentials for ${host}: set TF_TOKEN_${host.replace(/\./g, '_').replace(/-/g, '__')} or a credentials "${host}" block in the Terraform CLI configuration)`;
}
