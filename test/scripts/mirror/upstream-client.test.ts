import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamClient, UpstreamError, type UpstreamLimits } from '../../../src/http/upstream-client';
import { DEFAULT_LIMITS } from '../../../src/mirror/upstream-http';

/**
 * The one upstream client (src/http/upstream-client.ts) with the CLI's and the
 * Worker's parameters against a real HTTP server: what differs is only the
 * parameter (retries, tokens, redirect limit); redirect hops are counted.
 */
let server: Server;
let base: string;
const seen: { path: string; authorization: string | undefined }[] = [];
let flaky = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url!, authorization: req.headers.authorization });
    if (req.url === '/flaky') {
      if (flaky++ === 0) return res.writeHead(503, { 'retry-after': '0' }).end();
      return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    }
    const hop = /^\/hop\/(\d+)$/.exec(req.url!);
    if (hop) {
      const n = Number(hop[1]);
      return n === 0 ? res.writeHead(200).end('{"ok":"after hops"}') : res.writeHead(302, { location: `/hop/${n - 1}` }).end();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const retrying = (log: string[]): UpstreamLimits => ({
  ...DEFAULT_LIMITS,
  maxRedirects: 10,
  idleTimeout: true,
  userAgent: 'test',
  retry: { retries: 2, backoffMs: 1, maxRetryAfterMs: 1000, log: (line) => log.push(line) },
  tokenFor: () => 'upstream-test-token',
});

describe('the one upstream client', () => {
  it('without a retry policy (the Worker), a 503 is an UpstreamError at once, carrying the status; with one (the CLI), it is retried', async () => {
    flaky = 0;
    const worker = new UpstreamClient(DEFAULT_LIMITS);
    const error = await worker.getJson(`${base}/flaky`, 'doc').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ status: 502, httpStatus: 503, message: `doc ${base}/flaky: HTTP 503` });
    expect(worker.counts.subrequests).toBe(1);

    flaky = 0;
    const log: string[] = [];
    const cli = new UpstreamClient(retrying(log));
    expect((await cli.getJson(`${base}/flaky`, 'doc')).json).toEqual({ ok: true });
    expect(cli.counts.subrequests).toBe(2);
    expect(log).toEqual([`  doc ${base}/flaky: HTTP 503; retrying in 0.0 s (attempt 2 of 3)`]);
  });

  it('sends a token only when tokenFor is given, and only with registry API requests', async () => {
    seen.length = 0;
    await new UpstreamClient(DEFAULT_LIMITS).getJson(`${base}/hop/0`, 'doc');
    const cli = new UpstreamClient(retrying([]));
    await cli.getJson(`${base}/hop/0`, 'doc');
    await cli.getFile(`${base}/hop/0`, 'SHA256SUMS');
    expect(seen.map((s) => s.authorization)).toEqual([undefined, 'Bearer upstream-test-token', undefined]);
  });

  it('follows up to maxRedirects, counting every hop as a subrequest, and refuses one more', async () => {
    const worker = new UpstreamClient(DEFAULT_LIMITS);
    expect((await worker.getJson(`${base}/hop/5`, 'doc')).json).toEqual({ ok: 'after hops' });
    expect(worker.counts.subrequests).toBe(6);
    await expect(worker.getJson(`${base}/hop/6`, 'doc')).rejects.toThrow(`doc ${base}/hop/6: more than 5 redirects`);
    expect((await new UpstreamClient(retrying([])).getJson(`${base}/hop/6`, 'doc')).json).toEqual({ ok: 'after hops' });
  });

  it("checks every hop of a redirect chain, the middle ones too (the module proxy's https rule): a refused hop is never requested", async () => {
    const { requireHttps } = await import('../../../src/mirror/modules/source');
    const worker = new UpstreamClient(DEFAULT_LIMITS);
    const checked: string[] = [];
    // A chain whose first and last hops the policy allows, and a middle one it does not (plain http to another host).
    const named = (host: string) => host === '127.0.0.1';
    const middle = `${base}/hop/1`.replace('127.0.0.1', 'localhost');
    const hostile = createServer((_req, res) => res.writeHead(302, { location: middle }).end());
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    try {
      const start = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/start`;
      seen.length = 0;
      const error = await worker
        .openArchive(start, 'module package', (url) => {
          checked.push(url);
          requireHttps(url, named);
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UpstreamError);
      expect((error as Error).message).toMatch(/plain http:\/\/.*hosts\["localhost"\]/);
      expect(checked).toEqual([start, middle]);
      expect(seen).toEqual([]); // the middle hop (and so the last) never requested
    } finally {
      await new Promise<void>((resolve) => hostile.close(() => resolve()));
    }
    // Every hop of an allowed chain is checked: first, each redirect, last.
    checked.length = 0;
    await (await worker.openArchive(`${base}/hop/2`, 'module package', (url) => checked.push(url) && undefined)).response.body?.cancel();
    expect(checked).toEqual([`${base}/hop/2`, `${base}/hop/1`, `${base}/hop/0`]);
  });
});
