import { AwsClient } from 'aws4fetch';
import type { BlobHead, BlobStore, BlobWriteCondition } from '../../../src/store/store';
import { concatBytes } from '../../../src/bytes';
import { fixedParts } from './parts';
import { backoff, sleep } from './retry';

/**
 * --remote's R2: the BlobStore interface over R2's S3-compatible API, signed
 * with aws4fetch, with multipart uploads for large objects and conditional
 * writes for leases and records. The access key pair is used only to sign
 * requests, never logged.
 */

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
    options: { httpMetadata?: { contentType?: string; cacheControl?: string }; customMetadata?: Record<string, string>; onlyIf?: BlobWriteCondition } = {},
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
      const body = concatBytes(head, buffered);
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

  private objectHeaders(options: {
    httpMetadata?: { contentType?: string; cacheControl?: string };
    customMetadata?: Record<string, string>;
  }): Record<string, string> {
    const headers: Record<string, string> = {};
    if (options.httpMetadata?.contentType) headers['content-type'] = options.httpMetadata.contentType;
    if (options.httpMetadata?.cacheControl) headers['cache-control'] = options.httpMetadata.cacheControl;
    for (const [name, value] of Object.entries(options.customMetadata ?? {})) headers[`x-amz-meta-${name.toLowerCase()}`] = value;
    return headers;
  }
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
  return text
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
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
