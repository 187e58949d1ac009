import { errorResponse } from './responses';
import { evaluateConditions, parseRange, type Outcome, type Validators } from './conditional';
import { EDGE_CACHE_MAX_BYTES, storedResponse, type EdgeCache } from '../store/edge-cache';

/**
 * Serves one stored R2 object (a release file, a module archive) with full
 * HTTP semantics, GET and HEAD alike: validators (ETag, Last-Modified),
 * preconditions, one byte range, streaming — never buffering the object —
 * and the location's edge cache.
 */

export interface ObjectServeOptions {
  /** Content-Type of the object. */
  contentType: string;
  /** Cache-Control sent to this client (the stored entry keeps its own). */
  cacheControl: string;
  /** The answer when the object does not exist. */
  missing: () => Response;
  /** The location's cache (edgeCacheFor), or null to read R2 every time. */
  edgeCache: EdgeCache | null;
  /** Objects larger than this are never put into the edge cache (default EDGE_CACHE_MAX_BYTES). */
  edgeCacheMaxBytes?: number;
}

// Below this size a miss tees R2's stream into the cache; above, the cache is filled by a second R2 read
// in the background, so a slow client never makes the isolate hold the difference between the two branches.
const TEE_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The answer to a GET or HEAD of R2 object `key`, decided by
 * evaluateConditions (src/http/conditional.ts): 200 with the whole object,
 * 206 with one range and Content-Range, 304, 412 or 416 (JSON errors with
 * a Content-Range giving the size for 416), and options.missing() when there is
 * no such object. HEAD gets the status and headers the same GET would, with
 * no body. Every answer that has the object carries ETag, Last-Modified,
 * Accept-Ranges: bytes and options.cacheControl.
 *
 * With an edge cache, a hit is answered from the cache alone (no R2 read);
 * a GET that misses is answered from R2 and fills the cache after the
 * response (objects over EDGE_CACHE_MAX_BYTES are never cached). R2 reads per
 * miss: one for GET without Range and for HEAD, two for a ranged GET (its
 * metadata first), plus one background read when a large object is cached.
 * Throws only what R2 throws (a 500 upstream).
 */
export async function serveR2Object(request: Request, bucket: R2Bucket, key: string, options: ObjectServeOptions): Promise<Response> {
  const { edgeCache } = options;
  const cached = edgeCache ? await fromEdgeCache(request, key, edgeCache, options) : undefined;
  if (cached) return cached;

  const head = request.method === 'HEAD';
  if (head || parseRange(request.headers.get('range')) !== null) {
    const object = await bucket.head(key);
    if (!object) return options.missing();
    const validators = r2Validators(object);
    const outcome = evaluateConditions(request.method, request.headers, validators);
    if (!head) fillEdgeCache(bucket, key, validators, options);
    if (head || outcome.status !== 206) {
      // The whole object only when a GET's Range turned out to be ignored (another unit, If-Range failed…).
      const body = !head && outcome.status === 200 ? ((await bucket.get(key))?.body ?? null) : null;
      return answer(outcome, validators, options, body);
    }
    const part = await bucket.get(key, { range: { offset: outcome.offset, length: outcome.length } });
    if (!part) return options.missing();
    return answer(outcome, validators, options, part.body);
  }

  const object = await bucket.get(key);
  if (!object) return options.missing();
  const validators = r2Validators(object);
  const outcome = evaluateConditions(request.method, request.headers, validators);
  if (outcome.status !== 200) {
    await object.body.cancel();
    fillEdgeCache(bucket, key, validators, options);
    return answer(outcome, validators, options, null);
  }
  let body = object.body;
  if (edgeCache && validators.size <= Math.min(TEE_MAX_BYTES, options.edgeCacheMaxBytes ?? EDGE_CACHE_MAX_BYTES)) {
    const [client, cache] = body.tee();
    body = client;
    edgeCache.put('r2', key, storedResponse(cache, storedHeaders(validators, options.contentType)));
  } else {
    fillEdgeCache(bucket, key, validators, options);
  }
  return answer(outcome, validators, options, body);
}

/** The answer from the edge cache, or undefined on a miss (or an entry without usable validators). */
async function fromEdgeCache(request: Request, key: string, edgeCache: EdgeCache, options: ObjectServeOptions): Promise<Response | undefined> {
  const hit = await edgeCache.match('r2', key);
  if (!hit?.body) return undefined;
  const validators = cachedValidators(hit.headers);
  if (!validators) {
    await hit.body.cancel();
    return undefined;
  }
  const outcome = evaluateConditions(request.method, request.headers, validators);
  if (request.method === 'HEAD' || outcome.status !== 200) await hit.body.cancel();
  if (request.method === 'HEAD' || (outcome.status !== 200 && outcome.status !== 206)) {
    return answer(outcome, validators, options, null);
  }
  if (outcome.status === 200) return answer(outcome, validators, options, hit.body);
  const range = await cachedRange(key, edgeCache, outcome, validators);
  return range ? answer(outcome, validators, options, range) : undefined; // evicted meanwhile: R2 answers
}

/**
 * A byte range of a cached object. The cache is asked for exactly that
 * range; when it answers 206 with that Content-Range (Cloudflare's cache
 * does) its body is used, otherwise (a 200 with the whole object) the range
 * is cut out of the stream as it passes — never buffered. Null when the
 * entry was evicted since the first lookup.
 */
async function cachedRange(
  key: string,
  edgeCache: EdgeCache,
  range: { offset: number; length: number },
  validators: Validators,
): Promise<ReadableStream | null> {
  const last = range.offset + range.length - 1;
  const response = await edgeCache.match('r2', key, { range: `bytes=${range.offset}-${last}` });
  if (!response?.body) return null;
  if (response.status === 206 && response.headers.get('content-range') === `bytes ${range.offset}-${last}/${validators.size}`) {
    return response.body;
  }
  return sliceStream(response.body, range.offset, range.length);
}

/** A stream of `length` bytes from `offset` of `body`, read through and cut as it passes; errors if `body` is shorter. */
export function sliceStream(body: ReadableStream<Uint8Array>, offset: number, length: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let skip = offset;
  let remaining = length;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          controller.error(new Error(`stream ended ${remaining} bytes before the end of the range`));
          return;
        }
        let chunk = value;
        if (skip > 0) {
          if (chunk.byteLength <= skip) {
            skip -= chunk.byteLength;
            continue;
          }
          chunk = chunk.subarray(skip);
          skip = 0;
        }
        if (chunk.byteLength >= remaining) {
          controller.enqueue(chunk.subarray(0, remaining));
          remaining = 0;
          controller.close();
          await reader.cancel();
          return;
        }
        remaining -= chunk.byteLength;
        controller.enqueue(chunk);
        return;
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/** Fills the cache with a second, background read of the whole object (when it fits the cache). */
function fillEdgeCache(bucket: R2Bucket, key: string, validators: Validators, options: ObjectServeOptions): void {
  const { edgeCache, contentType } = options;
  if (!edgeCache || validators.size > (options.edgeCacheMaxBytes ?? EDGE_CACHE_MAX_BYTES)) return;
  edgeCache.put(
    'r2',
    key,
    bucket.get(key).then((object) => (object ? storedResponse(object.body, storedHeaders(r2Validators(object), contentType)) : undefined)),
  );
}

function r2Validators(object: R2Object): Validators {
  return { etag: object.httpEtag, lastModified: object.uploaded, size: object.size };
}

function storedHeaders(validators: Validators, contentType: string): Record<string, string> {
  return {
    'content-type': contentType,
    etag: validators.etag,
    'last-modified': validators.lastModified.toUTCString(),
    'content-length': String(validators.size),
  };
}

/** The validators stored with a cache entry; null when one is missing or malformed. */
function cachedValidators(headers: Headers): Validators | null {
  const etag = headers.get('etag');
  const lastModified = new Date(headers.get('last-modified') ?? '');
  const size = Number(headers.get('content-length') ?? '');
  if (!etag || Number.isNaN(lastModified.getTime()) || !Number.isSafeInteger(size) || size < 0) return null;
  return { etag, lastModified, size };
}

/** The response for an outcome; `body` is the whole object for 200, the range for 206, ignored otherwise. */
function answer(outcome: Outcome, validators: Validators, options: ObjectServeOptions, body: ReadableStream | null): Response {
  const headers = new Headers({
    etag: validators.etag,
    'last-modified': validators.lastModified.toUTCString(),
    'cache-control': options.cacheControl,
  });
  switch (outcome.status) {
    case 304:
      return new Response(null, { status: 304, headers });
    case 412:
      return errorResponse(412, `precondition failed: ${outcome.failed} does not hold for this file (ETag ${validators.etag})`);
    case 416:
      return errorResponse(416, `requested range not satisfiable: the file has ${validators.size} bytes`, {
        'content-range': `bytes */${validators.size}`,
      });
    case 206:
      headers.set('content-range', `bytes ${outcome.offset}-${outcome.offset + outcome.length - 1}/${validators.size}`);
      headers.set('content-length', String(outcome.length));
      break;
    case 200:
      headers.set('content-length', String(validators.size));
      break;
  }
  headers.set('content-type', options.contentType);
  headers.set('accept-ranges', 'bytes');
  return new Response(body, { status: outcome.status, headers });
}
