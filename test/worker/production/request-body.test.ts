import { describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, PART_BYTES } from '../../../src/routes/publish/context';
import { zipStored } from '../../fixtures/archives';
import { REQUEST_BODY_LIMIT_BYTES } from '../../fixtures/production/rules';
import { bearer, buildRelease, issue, manifestOf, registerFixtureKey, startPublish, type Session } from '../publish/api';
import { get } from '../helpers';
import { at, expectNoFailures, ORIGIN, production } from './scenario';

// Cloudflare's request body limit (100 MB on Free and Pro zones: a bigger body is answered 413 before the
// Worker runs) against a real-sized provider: a 101 MB platform archive published through the publish API.
// The API's client (scripts/lib/registry-api.ts) sends each file as the session says: whole, or in `parts`
// parts of `part_size` bytes; so what must hold is that every request the session asks for fits the limit.

const NS = 'bodylimit';
const ARCHIVE_BYTES = 101_000_000;

/** 101 MB of bytes that do not repeat in any short period (an xorshift stream), built once. */
function payload(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  const words = new Uint32Array(bytes.buffer, 0, Math.floor(size / 4));
  let x = 2463534242;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  return bytes;
}

describe('the request body limit (100 MB on Free and Pro zones)', () => {
  it('a 101 MB archive sent whole is refused 413 before the Worker runs; sent in the parts the session asks for, it publishes', async () => {
    await registerFixtureKey(NS);
    const { token } = await issue('publish', [`${NS}/huge`]);
    const big = payload(ARCHIVE_BYTES - 1000);
    const release = await buildRelease('huge', '1.0.0', {
      platforms: ['linux_amd64'],
      zip: async (_platform, entries) => zipStored({ ...entries, 'payload.bin': big }),
    });
    const archive = [...release.files].find(([name]) => name.endsWith('.zip'))!;
    expect(archive[1].byteLength).toBeGreaterThan(REQUEST_BODY_LIMIT_BYTES);
    const p = production();
    const started = await p.fetch(
      'A',
      new Request(`${ORIGIN}/v1/publish/providers/${NS}/huge/1.0.0`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(await manifestOf(release)),
      }),
    );
    expect(started.status, await started.clone().text()).toBe(201);
    const session = (await started.json()) as Session & { part_size: number };
    // Every request the session asks for fits under the limit: parts of 64 MiB (67,108,864 bytes).
    expect(session.part_size).toBe(PART_BYTES);
    expect(session.part_size).toBeLessThan(REQUEST_BODY_LIMIT_BYTES);
    const file = session.files.find((f) => f.filename === archive[0])!;
    expect(file.parts).toBe(2);

    const put = (path: string, bytes: Uint8Array) =>
      p.fetch(
        'A',
        new Request(new URL(path, ORIGIN), {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'content-length': String(bytes.byteLength) },
          body: bytes,
        }),
      );
    // Sent whole (one 101 MB body): Cloudflare answers 413 itself; the Worker never runs, nothing is counted.
    const invocationsBefore = p.invocations.length;
    const whole = await put(file.url, archive[1]);
    expect(whole.status).toBe(413);
    expect(await whole.text()).toContain('413 Request Entity Too Large');
    expect(p.invocations.length).toBe(invocationsBefore);
    expect(p.refusedRequests).toEqual([
      { location: 'A', method: 'PUT', path: new URL(file.url, ORIGIN).pathname, status: 413, bodyBytes: archive[1].byteLength },
    ]);

    // As the client sends it: each file in the parts the session says.
    for (const f of session.files) {
      const bytes = release.files.get(f.filename)!;
      for (let part = 1; part <= f.parts; part++) {
        const slice = f.parts === 1 ? bytes : bytes.subarray((part - 1) * session.part_size, Math.min(bytes.byteLength, part * session.part_size));
        const response = await put(`${f.url}${f.parts > 1 ? `?part=${part}` : ''}`, slice);
        expect(response.status, `${f.filename} part ${part}: ${await response.clone().text()}`).toBe(200);
      }
    }
    const committed = await p.fetch('A', new Request(new URL(session.commit_url, ORIGIN), { method: 'POST', headers: { authorization: `Bearer ${token}` } }));
    expect(committed.status, await committed.clone().text()).toBe(200);
    expect(((await committed.json()) as { status: string }).status).toBe('published');
    expect(p.refusedRequests).toHaveLength(1);

    // It installs at another location: its download document, and the archive (whole, 101 MB) from R2.
    const doc = await at(p, 'B', `/v1/providers/${NS}/huge/1.0.0/download/linux/amd64`);
    expect(doc.status).toBe(200);
    const url = new URL((JSON.parse(doc.text) as { download_url: string }).download_url, ORIGIN);
    const downloaded = await p.fetch('B', url.href);
    expect(downloaded.status).toBe(200);
    expect((await downloaded.arrayBuffer()).byteLength).toBe(archive[1].byteLength);
    expectNoFailures(p);
  }, 180_000);

  it("the Worker's own limit is the platform's: a body just over it meets the Worker's 413 naming the limit and the fix", async () => {
    expect(MAX_BODY_BYTES).toBe(REQUEST_BODY_LIMIT_BYTES);
    expect(PART_BYTES).toBeLessThan(MAX_BODY_BYTES);
    await registerFixtureKey(NS);
    const { token } = await issue('publish', [`${NS}/over`]);
    const release = await buildRelease('over', '1.0.0', { platforms: ['linux_amd64'] });
    const started = await startPublish(token, NS, release, await manifestOf(release));
    expect(started.status, await started.clone().text()).toBe(201);
    const file = ((await started.json()) as Session).files.find((f) => f.filename.endsWith('.zip'))!;
    // Locally (no Cloudflare in front), a body of MAX_BODY_BYTES + 1 bytes, declared by its Content-Length: the
    // Worker refuses it before reading a byte, with the limit Cloudflare applies in production.
    const over = new Uint8Array(MAX_BODY_BYTES + 1);
    const refused = await get(file.url, { method: 'PUT', headers: bearer(token, { 'content-length': String(over.byteLength) }), body: over });
    expect(refused.status).toBe(413);
    expect(((await refused.json()) as { errors: string[] }).errors[0]).toBe(
      `the body is ${MAX_BODY_BYTES + 1} bytes; at most 100000000 are accepted per request (Cloudflare's limit): send ${file.filename} in the parts the upload session names (part_size ${PART_BYTES})`,
    );
    // At the limit itself the Worker's check lets it through (it is then refused as longer than the file declared).
    const at = new Uint8Array(MAX_BODY_BYTES);
    const declared = await get(file.url, { method: 'PUT', headers: bearer(token, { 'content-length': String(at.byteLength) }), body: at });
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as { errors: string[] }).errors[0]).toBe(`the body is ${MAX_BODY_BYTES} bytes; ${file.filename} is ${file.size} bytes`);
  }, 60_000);
});
