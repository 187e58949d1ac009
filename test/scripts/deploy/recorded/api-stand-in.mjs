// The Cloudflare API answers the real wrangler 4.86 was pointed at (CLOUDFLARE_API_BASE_URL) to record
// the outputs in this folder; see README.md. EMPTY=1: an empty account; NOWORKER=1: the Worker was never deployed.
import { createServer } from 'node:http';
const ok = (result, extra = {}) => JSON.stringify({ success: true, errors: [], messages: [], result, ...extra });
let lifecycle = null;
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    console.error(req.method, req.url, body.slice(0, 200));
    const u = new URL(req.url, 'http://x');
    const p = u.pathname.replace(/^\/client\/v4/, '');
    res.setHeader('content-type', 'application/json');
    if (p === '/user/tokens/verify') return res.end(ok({ id: 'tok', status: 'active' }));
    if (p === '/user') return res.end(ok({ id: 'u1', email: 'ops@acme.com' }));
    if (p === '/accounts')
      return res.end(
        ok([{ id: '0123456789abcdef0123456789abcdef', name: "Acme Corp's Account", type: 'standard', settings: {}, created_on: '2023-01-01T00:00:00Z' }], {
          result_info: { page: 1, per_page: 20, count: 1, total_count: 1, total_pages: 1 },
        }),
      );
    if (p.endsWith('/storage/kv/namespaces') && req.method === 'GET' && Number(u.searchParams.get('page') ?? 1) > 1)
      return res.end(ok([], { result_info: { page: 2, per_page: 1000, count: 0, total_count: 2 } }));
    if (p.endsWith('/storage/kv/namespaces') && req.method === 'GET' && process.env.EMPTY)
      return res.end(ok([], { result_info: { page: 1, per_page: 1000, count: 0, total_count: 0 } }));
    if (p.endsWith('/storage/kv/namespaces') && req.method === 'GET')
      return res.end(
        ok(
          [
            { id: '9f0c5a3e2b1d4c6e8a7f9b0d1c2e3f4a', title: 'edge-registry', supports_url_encoding: true },
            { id: '1a2b3c4d5e6f708192a3b4c5d6e7f809', title: 'other-app-cache', supports_url_encoding: true },
          ],
          { result_info: { page: 1, per_page: 1000, count: 2, total_count: 2 } },
        ),
      );
    if (p.endsWith('/storage/kv/namespaces') && req.method === 'POST')
      return res.end(ok({ id: '5e6f7a8b9c0d4e1f2a3b4c5d6e7f8091', title: JSON.parse(body).title, supports_url_encoding: true }));
    if (p.endsWith('/r2/buckets') && req.method === 'GET' && process.env.EMPTY) return res.end(ok({ buckets: [] }));
    if (p.endsWith('/r2/buckets') && req.method === 'GET')
      return res.end(
        ok({
          buckets: [
            { name: 'edge-registry', creation_date: '2026-03-02T10:11:12.345Z' },
            { name: 'logs-archive', creation_date: '2025-11-30T08:00:00.000Z' },
          ],
        }),
      );
    if (p.endsWith('/r2/buckets') && req.method === 'POST') return res.end(ok({ name: JSON.parse(body).name, creation_date: '2026-11-22T04:40:00.000Z' }));
    // Lifecycle rules of a bucket: one default rule of Cloudflare's (multipart uploads aborted after 7 days), plus what was PUT.
    if (p.endsWith('/lifecycle') && req.method === 'GET')
      return res.end(
        ok({
          rules: lifecycle ?? [
            {
              id: 'Default Multipart Abort Rule',
              enabled: true,
              conditions: {},
              abortMultipartUploadsTransition: { condition: { maxAge: 604800, type: 'Age' } },
            },
          ],
        }),
      );
    if (p.endsWith('/lifecycle') && req.method === 'PUT') {
      lifecycle = JSON.parse(body).rules;
      return res.end(ok({}));
    }
    if (p.endsWith('/secrets') && req.method === 'GET') {
      if (process.env.NOWORKER) {
        res.statusCode = 404;
        return res.end(
          JSON.stringify({ success: false, errors: [{ code: 10007, message: 'This Worker does not exist on your account.' }], messages: [], result: null }),
        );
      }
      return res.end(ok(process.env.EMPTY ? [] : [{ name: 'URL_SIGNING_SECRET', type: 'secret_text' }]));
    }
    if (p.endsWith('/secrets') && req.method === 'PUT') return res.end(ok({ name: 'URL_SIGNING_SECRET', type: 'secret_text' }));
    res.statusCode = 404;
    res.end(JSON.stringify({ success: false, errors: [{ code: 7003, message: 'No route for that URI' }], messages: [], result: null }));
  });
});
server.listen(Number(process.argv[2]), '127.0.0.1');
