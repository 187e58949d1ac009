import type { BlobHead, BlobWriteCondition, KvStore } from '../../../src/store/store';
import { LocalRuntimeError } from './local-errors';

/**
 * How the CLI reaches the local state's KV and R2: through a small Worker
 * running in the local runtime, called with plain async HTTP requests
 * (Miniflare's dispatchFetch). Not through Miniflare's binding proxies: their
 * first call of each method and every property read of a returned object
 * (an R2 object's size, etag, text) is a *synchronous* round trip over a
 * worker thread, and under load that channel can fall out of step — each
 * later read then fails with "AssertionError: false == true" and no retry
 * recovers (seen in CI, a publish failing with exit 3). Plain requests have
 * no such shared state. Bytes travel as request and response bodies, never
 * as base64 inside JSON.
 */

export type PutOptions = {
  httpMetadata?: { contentType?: string; cacheControl?: string };
  customMetadata?: Record<string, string>;
  onlyIf?: BlobWriteCondition;
};

/** The parts of the R2 binding the local store uses, as this Worker offers them. */
export interface R2Like {
  head(key: string): Promise<BlobHead | null>;
  get(key: string): Promise<(BlobHead & { text(): Promise<string> }) | null>;
  put(key: string, value: Uint8Array | string | ArrayBuffer, options?: PutOptions): Promise<{ etag: string } | null>;
  list(options: { prefix: string; cursor?: string; limit?: number }): Promise<{ objects: { key: string }[]; truncated: boolean; cursor?: string }>;
  delete(key: string): Promise<void>;
  createMultipartUpload(
    key: string,
    options?: PutOptions,
  ): Promise<{
    uploadId: string;
    uploadPart(partNumber: number, bytes: Uint8Array): Promise<{ partNumber: number; etag: string }>;
    complete(parts: { partNumber: number; etag: string }[]): Promise<{ etag: string }>;
    abort(): Promise<void>;
  }>;
}

/** Sends a request to the store Worker: `path` is path-absolute (`/__edge-registry/…?…`). */
export type Dispatch = (path: string, init: { method: string; body?: Uint8Array | string; headers?: Record<string, string> }) => Promise<Response>;

/**
 * The Worker. Every answer is 200 with a JSON or raw body (`x-found: 0` for a
 * missing key), or 500 with the runtime's message for any error of a binding
 * (a LocalRuntimeError on the CLI's side, which retryBusy retries: see
 * local-errors.ts). Part uploads (`PUT /blob?uploadId=`)
 * stream the request body to R2 with its Content-Length, as one plain PUT.
 */
export const LOCAL_RUNTIME_SCRIPT = `
const json = (value) => Response.json(value);
const missing = () => new Response(null, { headers: { 'x-found': '0' } });
const head = (o) => ({ size: o.size, etag: o.etag, customMetadata: o.customMetadata || {} });
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const q = (name) => url.searchParams.get(name);
    const options = () => JSON.parse(request.headers.get('x-put-options') || '{}');
    try {
      switch (request.method + ' ' + url.pathname) {
        case 'GET /__edge-registry/kv': {
          const value = await env.REGISTRY_KV.get(q('key'), 'text');
          return value === null ? missing() : new Response(value);
        }
        case 'PUT /__edge-registry/kv': await env.REGISTRY_KV.put(q('key'), await request.text()); return json(null);
        case 'DELETE /__edge-registry/kv': await env.REGISTRY_KV.delete(q('key')); return json(null);
        case 'POST /__edge-registry/kv/list': {
          const r = await env.REGISTRY_KV.list(await request.json());
          return json({ keys: r.keys.map((k) => ({ name: k.name })), list_complete: r.list_complete, cursor: r.list_complete ? undefined : r.cursor });
        }
        case 'GET /__edge-registry/blob/head': {
          const o = await env.REGISTRY_R2.head(q('key'));
          return o ? json(head(o)) : missing();
        }
        case 'GET /__edge-registry/blob': {
          const o = await env.REGISTRY_R2.get(q('key'));
          return o ? new Response(o.body, { headers: { 'x-blob-head': JSON.stringify(head(o)) } }) : missing();
        }
        case 'PUT /__edge-registry/blob': {
          if (q('uploadId')) {
            const part = await env.REGISTRY_R2.resumeMultipartUpload(q('key'), q('uploadId')).uploadPart(Number(q('part')), request.body);
            return json({ partNumber: part.partNumber, etag: part.etag });
          }
          const o = await env.REGISTRY_R2.put(q('key'), request.body, options());
          return json(o ? { etag: o.etag } : null);
        }
        case 'DELETE /__edge-registry/blob': await env.REGISTRY_R2.delete(q('key')); return json(null);
        case 'POST /__edge-registry/blob/list': {
          const r = await env.REGISTRY_R2.list(await request.json());
          return json({ objects: r.objects.map((o) => ({ key: o.key })), truncated: r.truncated, cursor: r.truncated ? r.cursor : undefined });
        }
        case 'POST /__edge-registry/multipart/create': return json({ uploadId: (await env.REGISTRY_R2.createMultipartUpload(q('key'), options())).uploadId });
        case 'POST /__edge-registry/multipart/complete': {
          const o = await env.REGISTRY_R2.resumeMultipartUpload(q('key'), q('uploadId')).complete(await request.json());
          return json({ etag: o.etag });
        }
        case 'POST /__edge-registry/multipart/abort': await env.REGISTRY_R2.resumeMultipartUpload(q('key'), q('uploadId')).abort(); return json(null);
        default: return new Response('unknown local runtime operation ' + request.method + ' ' + url.pathname, { status: 404 });
      }
    } catch (error) {
      return new Response(String((error && error.message) || error), { status: 500 });
    }
  },
};`;

/**
 * Calls one operation; resolves with the answer. Throws LocalRuntimeError
 * (the status and the runtime's message) when the runtime answers other than
 * 200, and what dispatch throws when it does not answer.
 */
async function call(
  dispatch: Dispatch,
  what: string,
  method: string,
  path: string,
  query: Record<string, string>,
  body?: Uint8Array | string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const response = await dispatch(`/__edge-registry/${path}?${new URLSearchParams(query)}`, { method, body, headers });
  if (response.status !== 200) throw new LocalRuntimeError(what, query.key ?? '', response.status, await response.text());
  return response;
}

const found = (response: Response) => response.headers.get('x-found') !== '0';

/** The local KV namespace through the Worker. Errors: as `call`. */
export function dispatchKv(dispatch: Dispatch): KvStore {
  return {
    async get(key) {
      const response = await call(dispatch, 'KV read', 'GET', 'kv', { key });
      return found(response) ? response.text() : null;
    },
    async put(key, value) {
      await call(dispatch, 'KV write', 'PUT', 'kv', { key }, value);
    },
    async delete(key) {
      await call(dispatch, 'KV delete', 'DELETE', 'kv', { key });
    },
    async list(options) {
      return (await call(dispatch, 'KV list', 'POST', 'kv/list', {}, JSON.stringify(options))).json() as ReturnType<KvStore['list']>;
    },
  };
}

/** The local R2 bucket through the Worker. Errors: as `call`. */
export function dispatchR2(dispatch: Dispatch): R2Like {
  const withOptions = (options?: PutOptions) => ({ 'x-put-options': JSON.stringify(options ?? {}) });
  return {
    async head(key) {
      const response = await call(dispatch, 'R2 head', 'GET', 'blob/head', { key });
      return found(response) ? ((await response.json()) as BlobHead) : null;
    },
    async get(key) {
      const response = await call(dispatch, 'R2 read', 'GET', 'blob', { key });
      if (!found(response)) return null;
      const head = JSON.parse(response.headers.get('x-blob-head') ?? '{}') as BlobHead;
      const text = await response.text();
      return { ...head, text: async () => text };
    },
    async put(key, value, options) {
      const bytes = typeof value === 'string' ? new TextEncoder().encode(value) : value instanceof Uint8Array ? value : new Uint8Array(value);
      const response = await call(dispatch, 'R2 write', 'PUT', 'blob', { key }, bytes, { ...withOptions(options), 'content-length': String(bytes.byteLength) });
      return (await response.json()) as { etag: string } | null;
    },
    async list(options) {
      return (await call(dispatch, 'R2 list', 'POST', 'blob/list', {}, JSON.stringify(options))).json() as ReturnType<R2Like['list']>;
    },
    async delete(key) {
      await call(dispatch, 'R2 delete', 'DELETE', 'blob', { key });
    },
    async createMultipartUpload(key, options) {
      const { uploadId } = (await (await call(dispatch, 'R2 multipart start', 'POST', 'multipart/create', { key }, '', withOptions(options))).json()) as {
        uploadId: string;
      };
      return {
        uploadId,
        async uploadPart(part, bytes) {
          const query = { key, uploadId, part: String(part) };
          return (await call(dispatch, 'R2 write', 'PUT', 'blob', query, bytes, { 'content-length': String(bytes.byteLength) })).json() as Promise<{
            partNumber: number;
            etag: string;
          }>;
        },
        async complete(parts) {
          return (await call(dispatch, 'R2 multipart completion', 'POST', 'multipart/complete', { key, uploadId }, JSON.stringify(parts))).json() as Promise<{
            etag: string;
          }>;
        },
        async abort() {
          await call(dispatch, 'R2 multipart abort', 'POST', 'multipart/abort', { key, uploadId });
        },
      };
    },
  };
}
