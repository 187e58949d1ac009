import type { KvStore } from '../../../src/store/store';
import { backoff, sleep } from './retry';

/**
 * --remote's KV: the KvStore interface over the Workers KV REST API (the
 * calls `wrangler kv key …` makes), retrying 429/5xx answers and network
 * errors. The API token is sent only in a request header, never logged.
 */

export const CLOUDFLARE_API = 'https://api.cloudflare.com/client/v4';

export interface KvRestOptions {
  accountId: string;
  namespaceId: string;
  apiToken: string;
  /** Default https://api.cloudflare.com/client/v4. */
  apiBaseUrl?: string;
  /** Attempts for 429/5xx answers and network errors (default 4). */
  attempts?: number;
}

/** A KvStore over the Workers KV REST API. Errors carry the method, key and Cloudflare's message. */
export class KvRestStore implements KvStore {
  private readonly base: string;
  constructor(private readonly options: KvRestOptions) {
    const api = (options.apiBaseUrl ?? CLOUDFLARE_API).replace(/\/+$/, '');
    this.base = `${api}/accounts/${encodeURIComponent(options.accountId)}/storage/kv/namespaces/${encodeURIComponent(options.namespaceId)}`;
  }

  async get(key: string, _type: 'text'): Promise<string | null> {
    const response = await this.request('GET', `/values/${encodeURIComponent(key)}`, key);
    if (response.status === 404) return null;
    return response.text();
  }

  async put(key: string, value: string): Promise<void> {
    await this.request('PUT', `/values/${encodeURIComponent(key)}`, key, value);
  }

  async delete(key: string): Promise<void> {
    await this.request('DELETE', `/values/${encodeURIComponent(key)}`, key);
  }

  async list(options: { prefix: string; cursor?: string; limit?: number }): Promise<{ keys: { name: string }[]; list_complete: boolean; cursor?: string }> {
    const query = new URLSearchParams({ prefix: options.prefix, limit: String(options.limit ?? 1000) });
    if (options.cursor) query.set('cursor', options.cursor);
    const response = await this.request('GET', `/keys?${query}`, `${options.prefix}*`);
    const body = (await response.json()) as { result?: { name: string }[]; result_info?: { cursor?: string } };
    const cursor = body.result_info?.cursor || undefined;
    return { keys: (body.result ?? []).map(({ name }) => ({ name })), list_complete: !cursor, ...(cursor ? { cursor } : {}) };
  }

  private async request(method: string, path: string, key: string, body?: string): Promise<Response> {
    const attempts = this.options.attempts ?? 4;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await fetch(`${this.base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${this.options.apiToken}`,
            ...(body !== undefined ? { 'content-type': 'text/plain; charset=utf-8' } : {}),
          },
          ...(body !== undefined ? { body } : {}),
        });
      } catch (error) {
        if (attempt < attempts) {
          await sleep(backoff(attempt));
          continue;
        }
        throw new Error(`KV ${method} ${key}: ${(error as Error).message}`);
      }
      if (response.ok || (response.status === 404 && method === 'GET' && path.startsWith('/values/'))) return response;
      if ((response.status === 429 || response.status >= 500) && attempt < attempts) {
        await response.body?.cancel();
        await sleep(backoff(attempt));
        continue;
      }
      throw new Error(`KV ${method} ${key}: HTTP ${response.status} ${await apiErrors(response)}`);
    }
  }
}

async function apiErrors(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { errors?: { code?: number; message?: string }[] };
    return (body.errors ?? []).map((e) => `${e.code ?? ''} ${e.message ?? ''}`.trim()).join('; ');
  } catch {
    return text.slice(0, 200);
  }
}
