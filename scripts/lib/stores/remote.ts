import { AwsClient } from 'aws4fetch';
import { InputError } from '../../../src/protocol/index';
import type { BlobHead, BlobStore, BlobWriteCondition, KvStore } from '../../../src/store/store';
import type { RegistryConfig } from '../config';
import { concat, fixedParts } from './parts';
import type { StoreHandle } from './handle';

/**
 * --remote: the same KvStore/BlobStore interfaces over Cloudflare's APIs.
 * KV through the REST API (the calls `wrangler kv key …` makes), R2 through
 * its S3-compatible API signed with aws4fetch, with multipart uploads for
 * large objects. Credentials come from the environment and are sent only in
 * request headers, never logged.
 */

export const CLOUDFLARE_API = 'https://api.cloudflare.com/client/v4';

/** Environment variables --remote reads. */
export const REMOTE_ENV = {
  accountId: 'CLOUDFLARE_ACCOUNT_ID',
  apiToken: 'CLOUDFLARE_API_TOKEN',
  apiBaseUrl: 'CLOUDFLARE_API_BASE_URL',
  r2AccessKeyId: 'R2_ACCESS_KEY_ID',
  r2SecretAccessKey: 'R2_SECRET_ACCESS_KEY',
  r2Endpoint: 'R2_ENDPOINT',
} as const;

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

export interface R2S3Options {
  /** e.g. https://ACCOUNT_ID.r2.cloudflarestorage.com (R2_ENDPOINT overrides, e.g. for tests). */
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Default "auto" (R2); S3 emulators may want "us-east-1". */
  region?: string;
  /** Objects larger than this use a multipart upload (default 100 MiB). */
  multipartThreshold?: number;
  /** Part size of multipart uploads; R2 wants every part but the last the same size, at least 5 MiB (default 64 MiB). */
  partSize?: number;
  /** Called as bytes are sent (for progress on large files). */
  onProgress?: (key: string, sentBytes: number) => void;
}

/**
 * A BlobStore over R2's S3 API (path-style URLs). Custom metadata is sent as
 * x-amz-meta-* headers and read back from HEAD. Streams are read into parts:
 * an object that ends before the multipart threshold is one PUT, a larger one
 * a multipart upload (aborted if a part fails).
 */
export class R2S3Store implements BlobStore {
  private readonly client: AwsClient;
  private readonly threshold: number;
  private readonly partSize: number;

  constructor(private readonly options: R2S3Options) {
    this.client = new AwsClient({
      accessKeyId: options.accessKeyId,
      secretAccessKey: options.secretAccessKey,
      service: 's3',
      region: options.region ?? 'auto',
      retries: 3,
    });
    this.partSize = options.partSize ?? 64 * 1024 * 1024;
    this.threshold = Math.max(options.multipartThreshold ?? 100 * 1024 * 1024, this.partSize);
  }

  async head(key: string): Promise<BlobHead | null> {
    const response = await this.client.fetch(this.url(key), { method: 'HEAD' });
    if (response.status === 404) return null;
    if (!response.ok) throw new Error(`R2 HEAD ${key}: HTTP ${response.status}`);
    return objectHead(response);
  }

  async get(key: string): Promise<(BlobHead & { text(): Promise<string> }) | null> {
    const response = await this.client.fetch(this.url(key), { method: 'GET' });
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    if (!response.ok) throw new Error(`R2 GET ${key}: HTTP ${response.status} ${await s3Error(response)}`);
    const text = await response.text();
    return { ...objectHead(response), size: new TextEncoder().encode(text).byteLength, text: async () => text };
  }

  /** ListObjectsV2 (strongly consistent on R2), one page of up to `limit` keys. */
  async list(options: { prefix: string; cursor?: string; limit?: number }): Promise<{ objects: { key: string }[]; truncated: boolean; cursor?: string }> {
    const query = new URLSearchParams({ 'list-type': '2', prefix: options.prefix, 'max-keys': String(options.limit ?? 1000) });
    if (options.cursor) query.set('continuation-token', options.cursor);
    const endpoint = this.options.endpoint.replace(/\/+$/, '');
    const response = await this.client.fetch(`${endpoint}/${encodeURIComponent(this.options.bucket)}?${query}`, { method: 'GET' });
    if (!response.ok) throw new Error(`R2 list ${options.prefix}*: HTTP ${response.status} ${await s3Error(response)}`);
    const xml = await response.text();
    const objects = [...xml.matchAll(/<Contents>[\s\S]*?<Key>([^<]*)<\/Key>[\s\S]*?<\/Contents>/g)].map((m) => ({ key: unescapeXml(m[1]!) }));
    const truncated = xmlValue(xml, 'IsTruncated') === 'true';
    const cursor = xmlValue(xml, 'NextContinuationToken');
    return { objects, truncated, ...(truncated && cursor ? { cursor } : {}) };
  }

  async delete(key: string): Promise<void> {
    const response = await this.client.fetch(this.url(key), { method: 'DELETE' });
    if (!response.ok && response.status !== 404) throw new Error(`R2 DELETE ${key}: HTTP ${response.status} ${await s3Error(response)}`);
    await response.body?.cancel();
  }

  /**
   * Uploads `value`. With `onlyIf` (small objects only: leases, records) it
   * sends If-None-Match: * / If-Match: "etag", which R2 evaluates atomically
   * with the write, and resolves null on 412 Precondition Failed; a 409
   * (another conditional write of the key in flight) is sent again.
   */
  async put(
    key: string,
    value: ReadableStream | ArrayBuffer | Uint8Array | string,
    options: { httpMetadata?: { contentType?: string }; customMetadata?: Record<string, string>; onlyIf?: BlobWriteCondition } = {},
  ): Promise<{ key: string; etag: string } | null> {
    const headers = { ...this.objectHeaders(options), ...conditionHeaders(options.onlyIf) };
    const parts = partsOf(value, this.partSize);
    // Read up to the threshold before deciding between one PUT and a multipart upload.
    const head: Uint8Array[] = [];
    let buffered = 0;
    let next = await parts.next();
    while (!next.done && buffered + next.value.byteLength <= this.threshold) {
      head.push(next.value);
      buffered += next.value.byteLength;
      next = await parts.next();
    }
    if (next.done) {
      const body = concat(head, buffered);
      let response = await this.client.fetch(this.url(key), { method: 'PUT', headers: { ...headers, 'content-length': String(body.byteLength) }, body });
      // S3-compatible stores answer 409 ConditionalRequestConflict when two conditional writes of one key race;
      // the write is to be sent again, and then its condition decides (412 for the loser).
      for (let attempt = 1; response.status === 409 && options.onlyIf && attempt <= CONDITIONAL_CONFLICT_RETRIES; attempt++) {
        await response.body?.cancel();
        await sleep(backoff(attempt));
        response = await this.client.fetch(this.url(key), { method: 'PUT', headers: { ...headers, 'content-length': String(body.byteLength) }, body });
      }
      if (response.status === 412 && options.onlyIf) {
        await response.body?.cancel();
        return null;
      }
      if (!response.ok) throw new Error(`R2 PUT ${key}: HTTP ${response.status} ${await s3Error(response)}`);
      this.options.onProgress?.(key, body.byteLength);
      return { key, etag: unquote(response.headers.get('etag') ?? '') };
    }
    if (options.onlyIf) throw new Error(`R2 PUT ${key}: conditional writes are for small objects only`);
    return this.multipart(key, headers, head, next.value, parts);
  }

  private async multipart(
    key: string,
    headers: Record<string, string>,
    head: Uint8Array[],
    pending: Uint8Array,
    rest: AsyncGenerator<Uint8Array>,
  ): Promise<{ key: string; etag: string }> {
    const created = await this.client.fetch(`${this.url(key)}?uploads`, { method: 'POST', headers });
    if (!created.ok) throw new Error(`R2 create multipart upload ${key}: HTTP ${created.status} ${await s3Error(created)}`);
    const uploadId = xmlValue(await created.text(), 'UploadId');
    if (!uploadId) throw new Error(`R2 create multipart upload ${key}: no UploadId in the answer`);
    const etags: string[] = [];
    let sent = 0;
    try {
      const upload = async (part: Uint8Array) => {
        const number = etags.length + 1;
        const url = `${this.url(key)}?partNumber=${number}&uploadId=${encodeURIComponent(uploadId)}`;
        const response = await this.client.fetch(url, { method: 'PUT', headers: { 'content-length': String(part.byteLength) }, body: part });
        if (!response.ok) throw new Error(`R2 upload part ${number} of ${key}: HTTP ${response.status} ${await s3Error(response)}`);
        etags.push(response.headers.get('etag') ?? '');
        sent += part.byteLength;
        this.options.onProgress?.(key, sent);
      };
      for (const part of head) await upload(part);
      await upload(pending);
      for await (const part of rest) await upload(part);
      const body = `<CompleteMultipartUpload>${etags
        .map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`)
        .join('')}</CompleteMultipartUpload>`;
      const done = await this.client.fetch(`${this.url(key)}?uploadId=${encodeURIComponent(uploadId)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/xml' },
        body,
      });
      const text = await done.text();
      // S3 may answer 200 with an <Error> body for CompleteMultipartUpload.
      if (!done.ok || text.includes('<Error>')) throw new Error(`R2 complete multipart upload ${key}: HTTP ${done.status} ${xmlValue(text, 'Message') ?? ''}`);
      return { key, etag: unquote(xmlValue(text, 'ETag') ?? '') };
    } catch (error) {
      await this.client.fetch(`${this.url(key)}?uploadId=${encodeURIComponent(uploadId)}`, { method: 'DELETE' }).catch(() => undefined);
      throw error;
    }
  }

  private url(key: string): string {
    const endpoint = this.options.endpoint.replace(/\/+$/, '');
    return `${endpoint}/${encodeURIComponent(this.options.bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  private objectHeaders(options: { httpMetadata?: { contentType?: string }; customMetadata?: Record<string, string> }): Record<string, string> {
    const headers: Record<string, string> = {};
    if (options.httpMetadata?.contentType) headers['content-type'] = options.httpMetadata.contentType;
    for (const [name, value] of Object.entries(options.customMetadata ?? {})) headers[`x-amz-meta-${name.toLowerCase()}`] = value;
    return headers;
  }
}

/**
 * Opens the remote store of `config` from the environment. Throws InputError
 * naming every missing variable (never printing values).
 */
export function openRemoteStore(
  config: Pick<RegistryConfig, 'kvNamespaceId' | 'bucketName'>,
  env: NodeJS.ProcessEnv = process.env,
  tuning: Pick<R2S3Options, 'multipartThreshold' | 'partSize' | 'onProgress' | 'region'> = {},
): StoreHandle {
  const missing = [REMOTE_ENV.accountId, REMOTE_ENV.apiToken, REMOTE_ENV.r2AccessKeyId, REMOTE_ENV.r2SecretAccessKey].filter((name) => !env[name]);
  if (missing.length > 0) {
    throw new InputError(`--remote needs ${missing.join(', ')} in the environment (an API token with Workers KV edit rights, and an R2 API token's S3 access key pair)`);
  }
  const accountId = env[REMOTE_ENV.accountId]!;
  const endpoint = env[REMOTE_ENV.r2Endpoint] || `https://${accountId}.r2.cloudflarestorage.com`;
  const kv = new KvRestStore({
    accountId,
    namespaceId: config.kvNamespaceId,
    apiToken: env[REMOTE_ENV.apiToken]!,
    ...(env[REMOTE_ENV.apiBaseUrl] ? { apiBaseUrl: env[REMOTE_ENV.apiBaseUrl] } : {}),
  });
  const blobs = new R2S3Store({
    endpoint,
    bucket: config.bucketName,
    accessKeyId: env[REMOTE_ENV.r2AccessKeyId]!,
    secretAccessKey: env[REMOTE_ENV.r2SecretAccessKey]!,
    ...tuning,
  });
  return {
    kv,
    blobs,
    description: `remote KV namespace ${config.kvNamespaceId} and R2 bucket ${config.bucketName}`,
    close: async () => {},
  };
}

/**
 * The remote KV namespace alone (tokens and keys need no R2, so no R2
 * credentials are asked for). Throws InputError naming missing variables.
 */
export function openRemoteKv(config: Pick<RegistryConfig, 'kvNamespaceId'>, env: NodeJS.ProcessEnv = process.env): Pick<StoreHandle, 'kv' | 'description' | 'close'> {
  const missing = [REMOTE_ENV.accountId, REMOTE_ENV.apiToken].filter((name) => !env[name]);
  if (missing.length > 0) throw new InputError(`--remote needs ${missing.join(' and ')} (an API token with Workers KV Storage: Edit) in the environment`);
  const apiBaseUrl = env[REMOTE_ENV.apiBaseUrl];
  return {
    kv: new KvRestStore({ accountId: env[REMOTE_ENV.accountId]!, namespaceId: config.kvNamespaceId, apiToken: env[REMOTE_ENV.apiToken]!, ...(apiBaseUrl ? { apiBaseUrl } : {}) }),
    description: `remote KV namespace ${config.kvNamespaceId}`,
    close: async () => {},
  };
}

/** Splits any put() value into chunks of exactly `size` bytes (the last may be shorter). */
async function* partsOf(value: ReadableStream | ArrayBuffer | Uint8Array | string, size: number): AsyncGenerator<Uint8Array> {
  if (typeof value === 'string') value = new TextEncoder().encode(value);
  if (value instanceof ArrayBuffer) value = new Uint8Array(value);
  if (value instanceof Uint8Array) {
    for (let offset = 0; offset < value.byteLength; offset += size) yield value.subarray(offset, Math.min(offset + size, value.byteLength));
    return;
  }
  yield* fixedParts(value as ReadableStream<Uint8Array>, size);
}

function xmlValue(xml: string, tag: string): string | undefined {
  const match = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return match ? match[1]!.replace(/&quot;/g, '"').replace(/&amp;/g, '&') : undefined;
}

function unescapeXml(text: string): string {
  return text.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** S3 sends etags quoted; the R2 binding reports them bare, and the store compares bare etags. */
function unquote(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

/** How often a conditional PUT answered 409 (a concurrent conditional write of the same key) is sent again. */
const CONDITIONAL_CONFLICT_RETRIES = 5;

function conditionHeaders(onlyIf: BlobWriteCondition | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (onlyIf?.etagDoesNotMatch !== undefined) headers['if-none-match'] = onlyIf.etagDoesNotMatch === '*' ? '*' : `"${onlyIf.etagDoesNotMatch}"`;
  if (onlyIf?.etagMatches !== undefined) headers['if-match'] = onlyIf.etagMatches === '*' ? '*' : `"${onlyIf.etagMatches}"`;
  return headers;
}

function objectHead(response: Response): BlobHead {
  const customMetadata: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name.toLowerCase().startsWith('x-amz-meta-')) customMetadata[name.slice('x-amz-meta-'.length).toLowerCase()] = value;
  });
  return { size: Number(response.headers.get('content-length') ?? '0'), etag: unquote(response.headers.get('etag') ?? ''), customMetadata };
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

async function s3Error(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  return [xmlValue(text, 'Code'), xmlValue(text, 'Message')].filter(Boolean).join(': ');
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const backoff = (attempt: number) => 200 * 2 ** (attempt - 1);
