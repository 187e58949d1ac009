/**
 * R2's S3 API on this machine, as a child process of the bench or a test (side.ts
 * starts it): s3rver behind an HTTPS front that counts client requests and
 * checks presigned URLs' SigV4 signatures and expiry (s3rver does not). Run with
 * `node --no-experimental-require-module --import tsx`: s3rver's koa needs a
 * CommonJS `generator-function`, which Node 20's require(esm) would hand it as
 * an ES module. Arguments: DIR CERT_PATH KEY_PATH BUCKET. Prints one JSON line
 * {"endpoint", "direct"} when listening; GET /__counts?reset on the front
 * answers the counts since the last reset.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import S3rver from 's3rver';
import { presignedRequestProblem } from './sigv4';

const [dir, certPath, keyPath, bucket] = process.argv.slice(2) as [string, string, string, string];
const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: join(dir, 's3rver'), configureBuckets: [{ name: bucket, configs: [] }] });
const direct = (await s3.run()) as AddressInfo;
const handle = (s3 as unknown as { callback(): (req: IncomingMessage, res: unknown) => void }).callback();
let counts: Record<string, number> = {};
const front = createServer({ key: readFileSync(keyPath), cert: readFileSync(certPath) }, (req, res) => {
  const url = new URL(req.url ?? '/', 'https://x');
  if (url.pathname === '/__counts') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(counts));
    if (url.searchParams.has('reset')) counts = {};
    return;
  }
  const kind =
    req.method === 'GET' && url.pathname.startsWith(`/${bucket}/modules/`)
      ? 'GET r2 module package'
      : req.method === 'GET'
        ? 'GET r2 release file'
        : `${req.method} r2`;
  counts[kind] = (counts[kind] ?? 0) + 1;
  // s3rver does not verify SigV4 signatures: a presigned request is checked here, as R2 checks it (sigv4.ts).
  if (url.searchParams.has('X-Amz-Algorithm')) {
    const problem = presignedRequestProblem(
      req.method ?? 'GET',
      req.url ?? '/',
      req.headers.host ?? '',
      (id) => (id === 'S3RVER' ? 'S3RVER' : undefined),
      Date.now(),
    );
    if (problem !== null) {
      counts[`refused ${req.method}`] = (counts[`refused ${req.method}`] ?? 0) + 1;
      res.writeHead(403, { 'content-type': 'application/xml' });
      res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>${problem}</Message></Error>`);
      return;
    }
  }
  handle(req, res);
});
await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
process.stdout.write(
  `${JSON.stringify({ endpoint: `https://127.0.0.1:${(front.address() as AddressInfo).port}`, direct: `http://127.0.0.1:${direct.port}` })}\n`,
);
process.on('SIGTERM', () => {
  front.close();
  void s3.close().then(() => process.exit(0));
});
