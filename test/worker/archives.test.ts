import { beforeAll, describe, expect, it } from 'vitest';
import { address, fakeRelease, get, seed, sha256HexOf } from './helpers';
import type { FakeRelease } from '../fixtures/release';

const provider = address('acme', 'big');
const SIZE = 3 * 1024 * 1024 + 17;
let release!: FakeRelease;
const filename = 'terraform-provider-big_1.0.0_linux_amd64.zip';
const path = `/v1/archives/registry.example.com/acme/big/1.0.0/${filename}`;

beforeAll(async () => {
  release = (await seed([fakeRelease(provider, '1.0.0', ['linux_amd64', 'darwin_amd64'], { archiveSize: SIZE })]))[0]!;
}, 120_000); // a 3 MB release; seeding takes long on a busy machine

const bytes = () => release.bytes.get(filename)!;

describe('GET /v1/archives/…', () => {
  it('streams the whole archive with length, type, ETag and a long cache lifetime', async () => {
    const response = await get(path);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/zip');
    expect(response.headers.get('content-length')).toBe(String(SIZE));
    expect(response.headers.get('etag')).toMatch(/^".+"$/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(response.headers.get('accept-ranges')).toBe('bytes');
    expect(await sha256HexOf(response)).toBe(release.record.packages.find((p) => p.filename === filename)!.shasum);
  });

  it('serves SHA256SUMS as text and the signature as a PGP signature', async () => {
    const sums = await get('/v1/archives/registry.example.com/acme/big/1.0.0/terraform-provider-big_1.0.0_SHA256SUMS');
    expect(sums.status).toBe(200);
    expect(sums.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await sums.text()).toMatch(new RegExp(`^[0-9a-f]{64}  terraform-provider-big_1.0.0_darwin_amd64.zip\\n[0-9a-f]{64}  ${filename}\\n$`));
    const signature = await get('/v1/archives/registry.example.com/acme/big/1.0.0/terraform-provider-big_1.0.0_SHA256SUMS.sig');
    expect(signature.headers.get('content-type')).toBe('application/pgp-signature');
  });

  it('answers HEAD from metadata: length and ETag, no body', async () => {
    const response = await get(path, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(SIZE));
    expect(response.headers.get('etag')).toBe((await get(path)).headers.get('etag'));
    expect((await response.arrayBuffer()).byteLength).toBe(0);
  });

  it('honours a byte range, an open-ended range and a suffix range', async () => {
    const first = await get(path, { headers: { range: 'bytes=0-99' } });
    expect(first.status).toBe(206);
    expect(first.headers.get('content-range')).toBe(`bytes 0-99/${SIZE}`);
    expect(first.headers.get('content-length')).toBe('100');
    expect(new Uint8Array(await first.arrayBuffer())).toEqual(bytes().slice(0, 100));

    const tail = await get(path, { headers: { range: `bytes=${SIZE - 10}-` } });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe(`bytes ${SIZE - 10}-${SIZE - 1}/${SIZE}`);
    expect(new Uint8Array(await tail.arrayBuffer())).toEqual(bytes().slice(SIZE - 10));

    const suffix = await get(path, { headers: { range: 'bytes=-5' } });
    expect(suffix.status).toBe(206);
    expect(new Uint8Array(await suffix.arrayBuffer())).toEqual(bytes().slice(SIZE - 5));

    const clipped = await get(path, { headers: { range: `bytes=${SIZE - 3}-${SIZE + 100}` } });
    expect(clipped.status).toBe(206);
    expect(clipped.headers.get('content-range')).toBe(`bytes ${SIZE - 3}-${SIZE - 1}/${SIZE}`);
  });

  it('answers 416 for a range past the end; ignores a malformed, multi-part or other-unit range (whole file)', async () => {
    const past = await get(path, { headers: { range: `bytes=${SIZE}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${SIZE}`);
    for (const range of ['bytes=5-1', 'items=0-1', 'bytes=0-1,5-9', 'bytes=-']) {
      const response = await get(path, { headers: { range } });
      expect(response.status, range).toBe(200);
      expect(response.headers.get('content-length'), range).toBe(String(SIZE));
      await response.body?.cancel();
    }
  });

  it('answers 304 to If-None-Match with the current ETag', async () => {
    const etag = (await get(path, { method: 'HEAD' })).headers.get('etag')!;
    const response = await get(path, { headers: { 'if-none-match': etag } });
    expect(response.status).toBe(304);
    expect(response.headers.get('etag')).toBe(etag);
  });

  it('answers 404 for a missing file or a name that is not a release file of that version', async () => {
    for (const missing of [
      '/v1/archives/registry.example.com/acme/big/1.0.0/terraform-provider-big_1.0.0_windows_amd64.zip',
      '/v1/archives/registry.example.com/acme/big/2.0.0/terraform-provider-big_2.0.0_linux_amd64.zip',
      '/v1/archives/registry.example.com/acme/big/1.0.0/terraform-provider-big_2.0.0_linux_amd64.zip',
      '/v1/archives/registry.example.com/acme/big/1.0.0/terraform-provider-other_1.0.0_linux_amd64.zip',
      '/v1/archives/registry.example.com/acme/big/1.0.0/secrets.txt',
    ]) {
      const response = await get(missing);
      expect(response.status, missing).toBe(404);
      expect((await response.json<{ errors: string[] }>()).errors).toHaveLength(1);
    }
  });
});
