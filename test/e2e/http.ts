import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { gunzipSync } from 'node:zlib';

/**
 * A minimal HTTP(S) GET for the installer and the tests: Node's own client,
 * so HTTPS can trust exactly one certificate (the dev server's) through `ca`
 * without touching the process-wide trust store. Never follows redirects:
 * the registry answers every documented request directly. Like Go's client
 * (Terraform, OpenTofu) it asks for gzip and decodes it transparently.
 */
export interface HttpResponse {
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface HttpOptions {
  /** PEM certificate(s) to trust for https: URLs. */
  ca?: string | Buffer;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export function get(url: string, options: HttpOptions = {}): Promise<HttpResponse> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: 'GET',
        headers: { 'accept-encoding': 'gzip', ...options.headers },
        // "localhost" may resolve to ::1 first; the dev server listens on 127.0.0.1.
        family: 4,
        ...(target.protocol === 'https:' ? { ca: options.ca } : {}),
        timeout: options.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          try {
            const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
            resolve({ url, status: res.statusCode ?? 0, headers: res.headers, body });
          } catch (error) {
            reject(new Error(`GET ${url}: body is not the gzip its Content-Encoding says: ${String(error)}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** GET that requires 200 and a JSON body; throws with the status and body otherwise. */
export async function getJson<T>(url: string, options: HttpOptions = {}): Promise<{ response: HttpResponse; json: T }> {
  const response = await get(url, options);
  if (response.status !== 200) {
    throw new Error(`GET ${url}: HTTP ${response.status} ${response.body.toString('utf8').slice(0, 300)}`);
  }
  const type = String(response.headers['content-type'] ?? '');
  if (!type.startsWith('application/json')) throw new Error(`GET ${url}: content-type ${type}, expected application/json`);
  return { response, json: JSON.parse(response.body.toString('utf8')) as T };
}

/** GET that requires 200; returns the bytes. */
export async function getBytes(url: string, options: HttpOptions = {}): Promise<Buffer> {
  const response = await get(url, options);
  if (response.status !== 200) throw new Error(`GET ${url}: HTTP ${response.status} ${response.body.toString('utf8').slice(0, 300)}`);
  return response.body;
}
