import { InputError } from '../../src/protocol/errors';
import type { KvStore } from '../../src/store/types';

/**
 * A KvStore over the Cloudflare REST API, for `--remote`: the deployed
 * namespace (its id from wrangler.toml). Authenticates with the variables
 * wrangler itself reads in CI: CLOUDFLARE_API_TOKEN (with "Workers KV
 * Storage: Edit") and CLOUDFLARE_ACCOUNT_ID. The token is sent only to
 * api.cloudflare.com and never printed.
 */
export function openCloudflareKv(namespaceId: string, environment: NodeJS.ProcessEnv = process.env): KvStore {
  const apiToken = environment.CLOUDFLARE_API_TOKEN;
  const accountId = environment.CLOUDFLARE_ACCOUNT_ID;
  if (!apiToken || !accountId) {
    throw new InputError('--remote needs CLOUDFLARE_API_TOKEN (Workers KV Storage: Edit) and CLOUDFLARE_ACCOUNT_ID in the environment');
  }
  if (/^0+$/.test(namespaceId)) {
    throw new InputError(`the REGISTRY_KV id in wrangler.toml is the placeholder ${namespaceId}; put your namespace's id there`);
  }
  const base = `https://api.cloudflare.com/client/v4/accounts/${encodeURIComponent(accountId)}/storage/kv/namespaces/${encodeURIComponent(namespaceId)}`;
  const headers = { authorization: `Bearer ${apiToken}` };

  async function call(method: string, path: string, body?: string): Promise<Response> {
    const response = await fetch(`${base}${path}`, { method, headers, body });
    if (!response.ok && !(method === 'GET' && response.status === 404 && path.startsWith('/values/'))) {
      const text = await response.text().catch(() => '');
      let detail = text.slice(0, 300);
      try {
        const parsed = JSON.parse(text) as { errors?: { message?: string }[] };
        if (parsed.errors?.length) detail = parsed.errors.map((e) => e.message).join('; ');
      } catch {
        // not JSON: keep the text
      }
      throw new Error(`Cloudflare API ${method} ${path.split('?')[0]}: ${response.status} ${detail}`);
    }
    return response;
  }

  const value = (key: string) => `/values/${encodeURIComponent(key)}`;
  return {
    async get(key) {
      const response = await call('GET', value(key));
      return response.status === 404 ? null : response.text();
    },
    async put(key, text) {
      await call('PUT', value(key), text);
    },
    async delete(key) {
      await call('DELETE', value(key));
    },
    async list({ prefix, cursor, limit }) {
      const query = new URLSearchParams({ prefix });
      if (cursor) query.set('cursor', cursor);
      if (limit) query.set('limit', String(limit));
      const response = await call('GET', `/keys?${query}`);
      const body = (await response.json()) as { result: { name: string }[]; result_info?: { cursor?: string } };
      const next = body.result_info?.cursor || undefined;
      return { keys: body.result.map(({ name }) => ({ name })), list_complete: !next, cursor: next };
    },
  };
}
