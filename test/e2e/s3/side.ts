import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { get } from 'node:https';
import { AwsClient } from 'aws4fetch';

/**
 * R2's S3 API for RELEASE_FILES=r2, played on this machine by s3rver behind
 * an HTTPS server (which checks SigV4 presigned URLs as R2 does: s3rver does
 * not; sigv4.ts) with
 * `certificate` (Terraform downloads over HTTPS only with a trusted CA), in a
 * child process (server.ts says why). The front server counts every
 * client request by kind: R2 class-B reads that never reach the Worker.
 * `copyFrom` copies the release files and module packages of the Worker's
 * bucket (Miniflare's R2) into it, as on Cloudflare the one bucket is both.
 */
export interface S3Side {
  /** The Worker's variables and secrets for RELEASE_FILES=r2 against this server. */
  bindings: Record<string, string>;
  copied: boolean;
  copyFrom(bucket: R2Bucket): Promise<number>;
  /** Requests by "GET r2 release file" / "GET r2 module package" / other since the last reset; resets. */
  reset(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

const KEY = 'S3RVER'; // s3rver's built-in credentials
export const S3_BUCKET = 'edge-registry';

export async function startS3(dir: string, certificate: { certPath: string; keyPath: string }): Promise<S3Side> {
  const child = spawn(
    process.execPath,
    ['--no-experimental-require-module', '--import', 'tsx', join(import.meta.dirname, 'server.ts'), dir, certificate.certPath, certificate.keyPath, S3_BUCKET],
    { stdio: ['ignore', 'pipe', 'inherit'], cwd: join(import.meta.dirname, '..', '..', '..') },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the S3 server exited with ${code}`)));
  });
  const { endpoint, direct } = JSON.parse(line) as { endpoint: string; direct: string };
  const ca = readFileSync(certificate.certPath);
  const side: S3Side = {
    bindings: { R2_ENDPOINT: endpoint, R2_BUCKET_NAME: S3_BUCKET, R2_ACCESS_KEY_ID: KEY, R2_SECRET_ACCESS_KEY: KEY },
    copied: false,
    async copyFrom(bucket) {
      // Straight to s3rver (plain HTTP), not through the counting front.
      const client = new AwsClient({ accessKeyId: KEY, secretAccessKey: KEY, service: 's3', region: 'auto' });
      let copied = 0;
      // Records, uploads, audit: never release files.
      for await (const [key, object] of publicObjects(bucket, (k) => !k.startsWith('.'))) {
        const body = new Uint8Array(await object.arrayBuffer());
        const response = await client.fetch(`${direct}/${S3_BUCKET}/${key.split('/').map(encodeURIComponent).join('/')}`, { method: 'PUT', body });
        if (!response.ok) throw new Error(`copying ${key} into s3rver: ${response.status} ${await response.text()}`);
        copied++;
      }
      side.copied = true;
      return copied;
    },
    async reset() {
      const text = await new Promise<string>((resolve, reject) => {
        get(`${endpoint}/__counts?reset`, { ca }, (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve(body));
        }).on('error', reject);
      });
      return JSON.parse(text) as Record<string, number>;
    },
    async close() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
  return side;
}

/**
 * The R2 bucket's public custom domain for PUBLIC_DOCUMENTS=r2 (FILES_ORIGIN), played by an HTTPS server in this
 * process: GET and HEAD of `/KEY` answer the object KEY with its stored Content-Type and Cache-Control, as R2 does
 * behind a custom domain (no listing, no credentials). `copyFrom` copies every object of the Worker's bucket
 * (Miniflare's R2) but those whose name has a segment starting with "." — what docs/serving.md's WAF rule blocks
 * on the real domain. Every request is counted (an R2 class-B read each: the conservative case, no edge cache).
 */
export interface FilesOrigin {
  /** https://localhost:PORT */
  origin: string;
  copied: boolean;
  copyFrom(bucket: R2Bucket): Promise<number>;
  /** Requests by "GET r2 static document" / "GET r2 release file" / "HEAD r2 release file" / "refused" since the last reset; resets. */
  reset(): Record<string, number>;
  close(): Promise<void>;
}

export async function startFilesOrigin(certificate: { certPath: string; keyPath: string }): Promise<FilesOrigin> {
  const { createServer } = await import('node:https');
  const objects = new Map<string, { bytes: Uint8Array; contentType: string; cacheControl: string | undefined }>();
  let counts: Record<string, number> = {};
  const count = (name: string) => (counts[name] = (counts[name] ?? 0) + 1);
  const server = createServer({ cert: readFileSync(certificate.certPath), key: readFileSync(certificate.keyPath) }, (request, response) => {
    const key = decodeURIComponent(new URL(request.url ?? '/', 'https://files').pathname.slice(1));
    const object = objects.get(key);
    const kind = key.startsWith('v1/') ? 'static document' : 'release file';
    if (!object || (request.method !== 'GET' && request.method !== 'HEAD')) {
      count('refused');
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    count(`${request.method} r2 ${kind}`);
    response.writeHead(200, {
      'content-type': object.contentType,
      'content-length': String(object.bytes.byteLength),
      ...(object.cacheControl ? { 'cache-control': object.cacheControl } : {}),
    });
    response.end(request.method === 'HEAD' ? undefined : object.bytes);
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  const side: FilesOrigin = {
    origin: `https://localhost:${port}`,
    copied: false,
    async copyFrom(bucket) {
      // Never public: records, uploads, audit, keys.
      for await (const [key, object] of publicObjects(bucket, (k) => !k.startsWith('.') && !k.includes('/.')))
        objects.set(key, {
          bytes: new Uint8Array(await object.arrayBuffer()),
          contentType: object.httpMetadata?.contentType ?? 'application/octet-stream',
          cacheControl: object.httpMetadata?.cacheControl,
        });
      side.copied = true;
      return objects.size;
    },
    reset() {
      const result = counts;
      counts = {};
      return result;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return side;
}

/** Every object of `bucket` whose key `wanted` accepts, with its body, page by page. */
async function* publicObjects(bucket: R2Bucket, wanted: (key: string) => boolean): AsyncGenerator<[string, R2ObjectBody]> {
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ limit: 500, ...(cursor ? { cursor } : {}) });
    for (const listed of page.objects) if (wanted(listed.key)) yield [listed.key, (await bucket.get(listed.key))!];
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
}
