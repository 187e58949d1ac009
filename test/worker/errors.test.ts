import { describe, expect, it } from 'vitest';
import { address, fakeRelease, get, seed } from './helpers';

async function expectError(response: Response, status: number, contains?: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json');
  const body = await response.json<{ errors: string[] }>();
  expect(body.errors).toHaveLength(1);
  if (contains) expect(body.errors[0]).toContain(contains);
}

describe('requests that match no route', () => {
  it('answer 404 with a JSON error', async () => {
    for (const path of [
      '/v1/providers/',
      '/v1/providers/acme/thing',
      '/v1/modules/acme/x/aws/versions',
      '/favicon.ico',
      '/v1/mirror/registry.example.com/acme/thing',
    ]) {
      await expectError(await get(path), 404);
    }
  });
});

describe('methods other than GET and HEAD', () => {
  it('answer 405 with an Allow header, on every route', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      for (const path of [
        '/.well-known/terraform.json',
        '/v1/providers/acme/thing/versions',
        '/v1/archives/registry.example.com/acme/thing/1.0.0/terraform-provider-thing_1.0.0_linux_amd64.zip',
      ]) {
        const response = await get(path, { method, body: method === 'DELETE' ? undefined : 'x' });
        expect(response.headers.get('allow')).toBe('GET, HEAD');
        await expectError(response, 405, method);
      }
    }
  });

  it('Allow lists the methods the route table has for the path; a path no route has is 404 whatever the method', async () => {
    const login = await get('/login', { method: 'PUT', body: 'x' });
    expect(login.headers.get('allow')).toBe('GET, HEAD, POST');
    await expectError(login, 405, 'PUT');
    const logout = await get('/logout');
    expect(logout.headers.get('allow')).toBe('POST');
    await expectError(logout, 405, 'GET');
    const tokens = await get('/tokens/revoke', { method: 'DELETE' });
    expect(tokens.headers.get('allow')).toBe('GET, HEAD, POST');
    await expectError(await get('/no/such/route', { method: 'POST', body: 'x' }), 404);
    await expectError(await get('/v1/providers/acme/thing', { method: 'DELETE' }), 404);
  });

  it('HEAD is answered wherever GET is, without a body', async () => {
    const response = await get('/.well-known/terraform.json', { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(await response.text()).toBe('');
  });
});

describe('malformed input', () => {
  const cases: [string, string][] = [
    ['/v1/providers/ac%zzme/thing/versions', 'malformed percent-encoding'],
    ['/v1/providers/acme/th%00ing/versions', 'control character'],
    ['/v1/providers/acme%2Fother/thing/versions', 'slash'],
    ['/v1/providers/-acme/thing/versions', 'namespace "-acme" is invalid'],
    ['/v1/providers/acme/thing_x/versions', 'type "thing_x" is invalid'],
    ['/v1/providers/ac.me/thing/versions', 'namespace "ac.me" is invalid'],
    [`/v1/providers/${'a'.repeat(65)}/thing/versions`, 'longer than 64'],
    [`/v1/providers/${'a'.repeat(300)}/thing/versions`, 'longer than 256'],
    ['/v1/providers/acme/%F0%9F%92%A5/versions', 'type'],
    ['/v1/providers/acme/thing/1.0/download/linux/amd64', 'not a semantic version'],
    ['/v1/providers/acme/thing/1.0.0/download/linux-gnu/amd64', 'os "linux-gnu"'],
    ['/v1/providers/acme/thing/1.0.0/download/linux/x86%2064', 'arch'],
    ['/v1/mirror/not_a_host/acme/thing/index.json', 'hostname'],
    ['/v1/mirror/registry.example.com/acme/thing/1.0.0%00.json', 'control character'],
    ['/v1/archives/registry.example.com/acme/thing/1.0/terraform-provider-thing_1.0_linux_amd64.zip', 'not a semantic version'],
  ];
  for (const [path, message] of cases) {
    it(`${path.slice(0, 70)} → 400 saying "${message}"`, async () => {
      await expectError(await get(path), 400, message);
    });
  }

  it('never answers a 5xx to any of them, with any method', async () => {
    for (const [path] of cases) {
      for (const method of ['GET', 'HEAD', 'POST']) {
        const response = await get(path, { method });
        expect(response.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
        expect(response.status, `${method} ${path}`).toBeLessThan(500);
      }
    }
  });
});

describe('hostile conditional and range headers on release files', () => {
  const values = [
    'garbage',
    'W/garbage',
    ',',
    ', ,',
    '*, "a"',
    '"unterminated',
    'W/"',
    '""',
    '"a" "b"',
    'W/W/"a"',
    'bytes=0-1',
    'bytes=-',
    'bytes=99999999999999999999-',
    'bytes=-99999999999999999999',
    'bytes=1-0',
    'bytes=0-1,2-3',
    'items=0-1',
    'bytes=\t',
    '0',
    '-1',
    'Mon, 31 Feb 2025 10:00:00 GMT',
    'Thu, 01 Jan 1970 00:00:00 GMT',
    'Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT',
    'x'.repeat(8000),
  ];
  const fields = ['if-none-match', 'if-match', 'if-modified-since', 'if-unmodified-since', 'if-range', 'range'];

  it('never answer a 5xx, on a stored file or a missing one, GET or HEAD', async () => {
    await seed([fakeRelease(address('acme', 'hostile'), '1.0.0', ['linux_amd64'])]);
    const paths = [
      '/v1/archives/registry.example.com/acme/hostile/1.0.0/terraform-provider-hostile_1.0.0_linux_amd64.zip',
      '/v1/archives/registry.example.com/acme/hostile/1.0.0/terraform-provider-hostile_1.0.0_SHA256SUMS',
      '/v1/archives/registry.example.com/acme/hostile/1.0.0/terraform-provider-hostile_1.0.0_darwin_arm64.zip',
    ];
    for (const [f, field] of fields.entries()) {
      for (const [v, value] of values.entries()) {
        const path = paths[(f + v) % paths.length]!; // across the fields, each value meets every file
        for (const method of ['GET', 'HEAD']) {
          const headers = { [field]: value, ...(field === 'if-range' ? { range: 'bytes=0-1' } : {}) };
          const response = await get(path, { method, headers });
          await response.arrayBuffer();
          expect(response.status, `${method} ${path} ${field}: ${value.slice(0, 40)}`).toBeLessThan(500);
        }
      }
    }
  }, 120_000);
});
