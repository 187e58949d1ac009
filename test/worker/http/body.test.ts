import { describe, expect, it } from 'vitest';
import { readBodyAtMost, readFormAtMost, readJsonAtMost } from '../../../src/http/body';
import { InputError } from '../../../src/protocol/errors';
import { chunkedBody } from '../../fixtures/chunked-body';

// The one reader of small request bodies (src/http/body.ts): the limit holds while the body streams.

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  new Request('https://registry.example.com/x', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);

async function refusal(promise: Promise<unknown>): Promise<InputError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InputError);
  return error as InputError;
}

describe('readBodyAtMost', () => {
  it('reads a body up to the limit, byte for byte', async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(5000));
    expect(await readBodyAtMost(post(bytes), 5000)).toEqual(bytes);
    expect(await readBodyAtMost(post(null), 10)).toEqual(new Uint8Array());
  });

  it('refuses a chunked body with no declared length with 413 after reading little more than the limit, not the whole body', async () => {
    const { body, pulled } = chunkedBody(64 * 1024 * 1024);
    const request = post(body);
    expect(request.headers.get('content-length')).toBeNull();
    const error = await refusal(readBodyAtMost(request, 8192));
    expect(error.status).toBe(413);
    expect(error.message).toBe('the request body is over 8192 bytes; at most 8192 are accepted here');
    // 8 KiB + the chunk that crossed the limit (+ what the runtime buffers ahead): never the 64 MiB.
    expect(pulled()).toBeLessThanOrEqual(64 * 1024);
  });

  it('refuses a declared Content-Length over the limit without reading anything', async () => {
    const { body, pulled } = chunkedBody(1024 * 1024);
    const error = await refusal(readBodyAtMost(post(body, { 'content-length': String(1024 * 1024) }), 8192));
    expect(error.status).toBe(413);
    expect(error.message).toBe('the request body is 1048576 bytes; at most 8192 are accepted here');
    expect(pulled()).toBe(0);
  });

  it('one byte over the limit is refused; exactly the limit is read', async () => {
    expect((await refusal(readBodyAtMost(post(new Uint8Array(101)), 100))).status).toBe(413);
    expect((await readBodyAtMost(post(new Uint8Array(100)), 100)).byteLength).toBe(100);
  });
});

describe('readJsonAtMost, readFormAtMost', () => {
  it('parse what they read; refuse what is not JSON or a form with 400', async () => {
    expect(await readJsonAtMost(post('{"a":1}'), 100)).toEqual({ a: 1 });
    expect((await refusal(readJsonAtMost(post('{a'), 100))).status).toBe(400);
    const form = await readFormAtMost(post('token=ert_x&next=%2F', { 'content-type': 'application/x-www-form-urlencoded' }), 100);
    expect([form.get('token'), form.get('next')]).toEqual(['ert_x', '/']);
    expect((await refusal(readFormAtMost(post('x', { 'content-type': 'multipart/form-data; boundary=zz' }), 100))).status).toBe(400);
  });

  it('a chunked form over the limit: 413, never buffered whole', async () => {
    const { body, pulled } = chunkedBody(16 * 1024 * 1024);
    const error = await refusal(readFormAtMost(post(body, { 'content-type': 'application/x-www-form-urlencoded' }), 8192));
    expect(error.status).toBe(413);
    expect(pulled()).toBeLessThanOrEqual(64 * 1024);
  });
});
