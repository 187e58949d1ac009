import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { InputError } from '../../src/protocol/errors';
import { RegistryClient } from '../../scripts/lib/registry-api';

/**
 * The publish API client's uploads (scripts/lib/registry-api.ts) against a scripted HTTP server: files sent
 * whole go up together (at most 4 at once), a file in parts goes alone, progress lines keep the session's
 * order, and after a failure nothing new starts and the first failing file's error (in that order) is thrown,
 * as when the files went one by one.
 */

interface Seen {
  method: string;
  path: string;
  bytes: number;
  /** Uploads in flight when this one arrived (itself included). */
  concurrent: number;
}

let server: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server answering every PUT after `delayMs(path)`, with `status(path)` (200 by default), and the commit with {status: published}. */
async function fakeRegistry(
  options: { delayMs?: (path: string) => number; status?: (path: string) => number; headers?: Record<string, string> } = {},
): Promise<{ origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  let inFlight = 0;
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    const path = request.url ?? '';
    if (request.method === 'PUT') inFlight++;
    const concurrent = inFlight;
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({ method: request.method!, path, bytes: Buffer.concat(chunks).length, concurrent });
      setTimeout(() => {
        if (request.method === 'PUT') inFlight--;
        const status = options.status?.(path) ?? 200;
        response.writeHead(status, { 'content-type': 'application/json', ...options.headers });
        response.end(JSON.stringify(status === 200 ? { status: 'published' } : { errors: [`refused ${path}`] }));
      }, options.delayMs?.(path) ?? 30);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
  return { origin: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
}

const file = (filename: string, size: number) => ({ filename, size, bytes: new Uint8Array(size).fill(7) });

function session(files: { filename: string; size: number }[], partSize = 1000) {
  return {
    upload: 'u1',
    part_size: partSize,
    commit_url: '/v1/publish/uploads/u1/commit',
    files: files.map((f) => ({
      filename: f.filename,
      size: f.size,
      url: `/v1/publish/uploads/u1/${f.filename}`,
      parts: Math.max(1, Math.ceil(f.size / partSize)),
    })),
  };
}

async function client(origin: string, lines: string[]): Promise<RegistryClient> {
  return RegistryClient.open(origin, { EDGE_REGISTRY_TOKEN: 'tok' }, (line) => lines.push(line));
}

describe('RegistryClient.uploadAndCommit', () => {
  it('uploads whole files together, at most 4 at once, progress in the session order, then commits', async () => {
    const { origin, seen } = await fakeRegistry();
    const files = ['a.zip', 'b.zip', 'c.zip', 'd.zip', 'e.zip', 'SUMS'].map((name) => file(name, 100));
    const lines: string[] = [];
    const result = await (await client(origin, lines)).uploadAndCommit<{ status: string }>(session(files), files);
    expect(result).toEqual({ status: 'published' });
    expect(lines.filter((l) => l.includes('uploading')).map((l) => l.trim().split(' ')[1])).toEqual(['a.zip', 'b.zip', 'c.zip', 'd.zip', 'e.zip', 'SUMS']);
    const puts = seen.filter((s) => s.method === 'PUT');
    expect(puts).toHaveLength(6);
    expect(Math.max(...puts.map((p) => p.concurrent))).toBe(4);
    expect(puts.every((p) => p.bytes === 100)).toBe(true);
    expect(seen.at(-1)).toMatchObject({ method: 'POST', path: '/v1/publish/uploads/u1/commit' });
  });

  it('sends a file in parts alone, part after part, after the uploads before it finished', async () => {
    const { origin, seen } = await fakeRegistry();
    const files = [file('a.zip', 100), file('big.zip', 2500), file('SUMS', 50)];
    await (await client(origin, [])).uploadAndCommit(session(files), files);
    const puts = seen
      .filter((s) => s.method === 'PUT')
      .map((s) => ({ path: s.path.slice(s.path.lastIndexOf('/') + 1), bytes: s.bytes, concurrent: s.concurrent }));
    expect(puts).toEqual([
      { path: 'a.zip', bytes: 100, concurrent: 1 },
      { path: 'big.zip?part=1', bytes: 1000, concurrent: 1 },
      { path: 'big.zip?part=2', bytes: 1000, concurrent: 1 },
      { path: 'big.zip?part=3', bytes: 500, concurrent: 1 },
      { path: 'SUMS', bytes: 50, concurrent: 1 },
    ]);
  });

  it("throws the first failing file's error in the session's order, starts nothing after a failure and never commits", async () => {
    // b.zip fails last, c.zip first (a and d succeed between, long after): the error is b.zip's, as when the files went one by one.
    const { origin, seen } = await fakeRegistry({
      delayMs: (path) => (path.endsWith('b.zip') ? 1200 : path.endsWith('c.zip') ? 10 : 800),
      status: (path) => (path.endsWith('b.zip') ? 413 : path.endsWith('c.zip') ? 400 : 200),
    });
    const files = ['a.zip', 'b.zip', 'c.zip', 'd.zip', 'e.zip', 'f.zip'].map((name) => file(name, 100));
    const lines: string[] = [];
    const error = await (await client(origin, lines))
      .uploadAndCommit(session(files), files)
      .then(() => null)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toBe('the registry refused the publish (413): refused /v1/publish/uploads/u1/b.zip');
    const paths = seen.map((s) => s.path.slice(s.path.lastIndexOf('/') + 1));
    expect(paths).not.toContain('commit');
    // a–d went together; c.zip's failure (first to come back) stopped e and f from starting.
    expect(paths.sort()).toEqual(['a.zip', 'b.zip', 'c.zip', 'd.zip']);
    expect(lines.some((l) => l.includes('committing'))).toBe(false);
  });

  it('refuses before uploading anything when the server asks for a file the publish does not have', async () => {
    const { origin, seen } = await fakeRegistry();
    const files = [file('a.zip', 100)];
    await expect((await client(origin, [])).uploadAndCommit(session([...files, { filename: 'other.zip', size: 10 }]), files)).rejects.toThrow(
      'the server asked for other.zip, which this publish does not have',
    );
    expect(seen).toHaveLength(0);
  });

  it('a 5xx is an Error with the answer, a redirect is refused and not followed, a network failure says what failed', async () => {
    const files = [file('a.zip', 10)];
    const failing = await fakeRegistry({ status: (path) => (path.endsWith('a.zip') ? 503 : 200) });
    const error = await (await client(failing.origin, [])).uploadAndCommit(session(files), files).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(InputError);
    expect((error as Error).message).toBe('the registry answered 503: refused /v1/publish/uploads/u1/a.zip');
    await new Promise<void>((resolve) => server!.close(() => resolve()));

    const redirecting = await fakeRegistry({ status: () => 308, headers: { location: 'https://elsewhere.example/' } });
    const redirected = await (await client(redirecting.origin, [])).uploadAndCommit(session(files), files).catch((e: unknown) => e);
    expect(redirected).toBeInstanceOf(InputError);
    expect((redirected as Error).message).toBe(
      'the registry answered 308 (a redirect to https://elsewhere.example/); give --registry the address it redirects to',
    );
    expect(redirecting.seen.map((s) => s.path)).toEqual(['/v1/publish/uploads/u1/a.zip']);
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;

    // A port nothing listens on (a server's, closed before anything connected).
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const gone = await (await client(`http://127.0.0.1:${port}`, [])).uploadAndCommit(session(files), files).catch((e: unknown) => e);
    expect((gone as Error).message).toBe(`PUT http://127.0.0.1:${port}: fetch failed (connect ECONNREFUSED 127.0.0.1:${port})`);
  });

  it("a refusal quoting a CI token's claims reaches the terminal with its control characters escaped", async () => {
    const files = [file('a.zip', 10)];
    server = createServer((_request, response) => {
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ errors: ['the CI job (repository acme/x\u001b[2J\u001b]0;owned\u0007) matches none'] }));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const error = (await (await client(origin, [])).uploadAndCommit(session(files), files).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toBe('the registry refused the publish (403): the CI job (repository acme/x\\x1b[2J\\x1b]0;owned\\x07) matches none');
    expect(error.message).not.toMatch(/[\u0000-\u001f]/);
  });

  it('sends the bearer credential and reads a compressed answer', async () => {
    const { gzipSync } = await import('node:zlib');
    let authorization = '';
    server = createServer((request, response) => {
      authorization = request.headers.authorization ?? '';
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        response.end(gzipSync(JSON.stringify({ status: 'published' })));
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const files = [file('a.zip', 10)];
    expect(await (await client(origin, [])).uploadAndCommit(session(files), files)).toEqual({ status: 'published' });
    expect(authorization).toBe('Bearer tok');
  });

  it('a connection the server closes before answering is retried once on a new one (a file streamed from disk starts over); closed twice, the publish fails naming the request', async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'registry-api-'));
    try {
      writeFileSync(join(dir, 'a.zip'), Buffer.alloc(5000, 7));
      const onDisk = [{ filename: 'a.zip', size: 5000, path: join(dir, 'a.zip') }];
      let closeFirst = 1;
      const received: { method: string; bytes: number }[] = [];
      server = createServer((request, response) => {
        const chunks: Buffer[] = [];
        request.on('data', (chunk: Buffer) => chunks.push(chunk));
        request.on('end', () => {
          // As a server letting go of a kept-alive connection just as the request arrives: no answer at all.
          if (request.method === 'PUT' && closeFirst-- > 0) return request.socket.destroy();
          received.push({ method: request.method!, bytes: Buffer.concat(chunks).length });
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ status: 'published' }));
        });
      });
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect(await (await client(origin, [])).uploadAndCommit(session(onDisk, 10_000), onDisk)).toEqual({ status: 'published' });
      expect(received).toEqual([
        { method: 'PUT', bytes: 5000 },
        { method: 'POST', bytes: 0 },
      ]);

      closeFirst = 2;
      received.length = 0;
      const error = await (await client(origin, [])).uploadAndCommit(session(onDisk, 10_000), onDisk).catch((e: unknown) => e);
      expect(error).not.toBeInstanceOf(InputError);
      expect((error as Error).message).toMatch(/^PUT http:\/\/127\.0\.0\.1:\d+: fetch failed \(other side closed\)$/);
      expect(received).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
