import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

/**
 * One HTTP request with node:http / node:https, for the publish API client (registry-api.ts), instead of
 * the global fetch: a fresh CLI process spends ~20 ms loading fetch's undici and more running its
 * still-cold code per request (6 requests: 80–110 ms with fetch against 37–47 ms with node:http, measured
 * 26 Nov 2026). Connections are kept alive (Node's global agents) and never hold the process open.
 *
 * What fetch did and this keeps: the whole answer read (and decoded, should the server compress it); a
 * connection not made within 10 s or a connection silent for 300 s is an error (undici's connect timeout
 * and headers/body timeouts). What it does not: follow redirects (a 3xx is returned like any answer; the
 * publish API never redirects, and a credential is not sent on to another address).
 */

export interface SentRequest {
  method: string;
  headers: Record<string, string>;
  /** Bytes, text, or a stream of exactly content-length bytes. */
  body?: string | Uint8Array | Readable;
}

export interface Answer {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export const CONNECT_TIMEOUT_MS = 10_000;
export const IDLE_TIMEOUT_MS = 300_000;

export async function send(url: URL, init: SentRequest): Promise<Answer> {
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  return new Promise<Answer>((resolve, reject) => {
    let req: ClientRequest;
    const fail = (error: Error) => {
      req?.destroy();
      reject(error);
    };
    req = request(url, { method: init.method, headers: init.headers }, (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', fail);
      response.on('end', () => {
        try {
          resolve({
            status: response.statusCode!,
            statusText: response.statusMessage ?? '',
            headers: response.headers,
            body: decoded(response.headers, Buffer.concat(chunks)),
          });
        } catch (error) {
          reject(error);
        }
      });
    });
    req.on('error', fail);
    req.setTimeout(IDLE_TIMEOUT_MS, () => fail(new Error(`no answer for ${IDLE_TIMEOUT_MS / 1000} s`)));
    req.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => fail(new Error(`could not connect within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    const body = init.body;
    if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) req.end(body);
    else {
      body.once('error', fail);
      body.pipe(req);
    }
  });
}

function decoded(headers: IncomingHttpHeaders, body: Buffer): Buffer {
  const encoding = headers['content-encoding']?.trim().toLowerCase();
  if (!encoding || encoding === 'identity') return body;
  if (encoding === 'gzip' || encoding === 'x-gzip') return gunzipSync(body);
  if (encoding === 'deflate') return inflateSync(body);
  if (encoding === 'br') return brotliDecompressSync(body);
  throw new Error(`the answer is encoded with ${encoding}, which this client does not read`);
}
