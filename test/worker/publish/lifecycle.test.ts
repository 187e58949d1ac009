import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { listAuditEntries } from '../../../src/store/audit/read';
import type { BlobStore } from '../../../src/store/store';
import { address, atFakeTime, fakeRelease, get, getWith, seed, storedEverything } from '../helpers';
import { bearer, issue } from './api';
import { chunkedBody } from '../../fixtures/chunked-body';

/**
 * `npm run lifecycle` over the publish API (POST /v1/publish/lifecycle/…):
 * a publish token of the namespace deprecates and withdraws; read tokens,
 * other namespaces and bad bodies are refused and change nothing; each
 * outcome is audited with the token as the actor.
 */
let publisher: string;
let publisherId: string;
beforeAll(async () => {
  ({ token: publisher, id: publisherId } = await issue('publish', ['acme'], { name: 'lifecycle' }));
  await seed([
    fakeRelease(address('acme', 'api-withdrawn'), '1.0.0', ['linux_amd64']),
    fakeRelease(address('acme', 'api-withdrawn'), '1.1.0', ['linux_amd64']),
  ]);
});

const post = (path: string, token: string | null, body: unknown) =>
  get(path, { method: 'POST', headers: bearer(token, { 'content-type': 'application/json' }), body: JSON.stringify(body) });

describe('POST /v1/publish/lifecycle/providers/:namespace/:type', () => {
  it('withdraws with a publish token: the version leaves the list, the warning says why; audited with the token', async () => {
    const response = await post('/v1/publish/lifecycle/providers/acme/api-withdrawn', publisher, {
      action: 'withdraw',
      version: '1.1.0',
      message: 'bad build',
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: 'changed',
      versions: ['1.0.0', '1.1.0'],
      lifecycle: { versions: { '1.1.0': { withdrawn: { message: 'bad build' } } } },
    });
    const list = await atFakeTime(Date.now() + 60_000, async () =>
      (await get('/v1/providers/acme/api-withdrawn/versions')).json<{ versions: { version: string }[]; warnings: string[] }>(),
    );
    expect(list.versions.map((v) => v.version)).toEqual(['1.0.0']);
    expect(list.warnings[0]).toContain('1.1.0 was withdrawn');
    const again = await post('/v1/publish/lifecycle/providers/acme/api-withdrawn', publisher, { action: 'withdraw', version: '1.1.0', message: 'bad build' });
    expect(await again.json()).toMatchObject({ status: 'unchanged' });
    const { entries } = await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { since: new Date(Date.now() - 60_000) });
    const mine = entries.filter((e) => e.target === `${env.REGISTRY_HOSTNAME}/acme/api-withdrawn 1.1.0`);
    expect(mine.map((e) => `${e.action} ${e.outcome}`)).toEqual(['lifecycle.withdraw ok', 'lifecycle.withdraw unchanged']);
    expect(mine[0]!.actor).toMatchObject({ kind: 'token', tokenId: publisherId });
  });

  it('refuses without credentials, with a read token or another namespace, and bad bodies or versions — nothing changes', async () => {
    const { token: reader } = await issue('read', ['acme']);
    const { token: other } = await issue('publish', ['other']);
    const path = '/v1/publish/lifecycle/providers/acme/api-withdrawn';
    const cases: [string | null, unknown, number][] = [
      [null, { action: 'deprecate', message: 'x' }, 401],
      [reader, { action: 'deprecate', message: 'x' }, 403],
      [other, { action: 'deprecate', message: 'x' }, 403],
      [publisher, { action: 'yank', version: '1.0.0' }, 400],
      [publisher, { action: 'withdraw', version: '1.0.0' }, 400],
      [publisher, { action: 'deprecate', message: 'x', extra: 1 }, 400],
      [publisher, ['deprecate'], 400],
      [publisher, { action: 'deprecate', version: '9.9.9', message: 'x' }, 404],
    ];
    for (const [token, body, status] of cases) {
      const response = await post(path, token, body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect((await response.json<{ errors: string[] }>()).errors[0]).toBeTruthy();
    }
    const state = await (await post(path, publisher, { action: 'undeprecate' })).json<{ status: string }>();
    expect(state.status).toBe('unchanged'); // nothing above deprecated it
    expect((await get(path)).status).toBe(405);
  });
});

describe('a change of a package or version the registry does not hold', () => {
  it('answers 404 naming the fix before anything is written: no lease taken, no audit entry, every KV key and R2 object as it was', async () => {
    // A change that succeeded first: the package's lease object exists, so taking it again would change its etag.
    const ok = await post('/v1/publish/lifecycle/providers/acme/api-withdrawn', publisher, { action: 'deprecate', version: '1.0.0', message: 'use 1.1' });
    expect(ok.status).toBe(200);
    const cases: [string, unknown, string][] = [
      ['providers/acme/api-withdrawn', { action: 'withdraw', version: '9.9.9', message: 'x' }, 'has no version 9.9.9; published: 1.0.0, 1.1.0'],
      ['providers/acme/api-withdrawn', { action: 'restore', version: '1.0.1' }, 'has no version 1.0.1; published: 1.0.0, 1.1.0'],
      ['providers/acme/api-withdrawn', { action: 'undeprecate', version: '2.0.0' }, 'has no version 2.0.0'],
      ['providers/acme/nonesuch', { action: 'deprecate', message: 'x' }, 'provider registry.example.com/acme/nonesuch has no published version'],
      ['modules/acme/none/aws', { action: 'withdraw', version: '1.0.0', message: 'x' }, 'module registry.example.com/acme/none/aws has no published version'],
    ];
    const before = await storedEverything();
    expect(before.some((line) => line.startsWith('r2:.leases/'))).toBe(true);
    for (const [path, body, message] of cases) {
      const response = await post(`/v1/publish/lifecycle/${path}`, publisher, body);
      expect(response.status, JSON.stringify(body)).toBe(404);
      expect((await response.json<{ errors: string[] }>()).errors[0]).toContain(message);
    }
    expect(await storedEverything()).toEqual(before);
  });
});

describe('POST /v1/publish/lifecycle/modules/:namespace/:name/:system', () => {
  it('answers 404 naming the module when it has no version', async () => {
    const response = await post('/v1/publish/lifecycle/modules/acme/none/aws', publisher, { action: 'deprecate', message: 'x' });
    expect(response.status).toBe(404);
    expect((await response.json<{ errors: string[] }>()).errors[0]).toContain('module registry.example.com/acme/none/aws has no published version');
  });
});

describe('the lifecycle body: read only after the credential, and never past 8 KiB', () => {
  const path = '/v1/publish/lifecycle/providers/acme/api-withdrawn';
  const chunked = (token: string | null, total: number) => {
    const stream = chunkedBody(total);
    const request = getWith({}, path, {
      method: 'POST',
      headers: bearer(token, { 'content-type': 'application/json' }),
      body: stream.body,
      duplex: 'half',
    } as RequestInit);
    return { request, pulled: stream.pulled };
  };

  it('without a credential (or with a refused one) nothing of the body is read: 401/403 with 0 bytes pulled', async () => {
    const { token: reader } = await issue('read', ['acme']);
    for (const [token, status] of [
      [null, 401],
      ['ert_' + 'x'.repeat(43), 401],
      [reader, 403],
    ] as const) {
      const { request, pulled } = chunked(token, 64 * 1024 * 1024);
      expect((await request).status).toBe(status);
      expect(pulled()).toBe(0);
    }
  });

  it('a chunked body of 64 MiB with no Content-Length from a valid publisher: 413 after little more than 8 KiB was read', async () => {
    const { request, pulled } = chunked(publisher, 64 * 1024 * 1024);
    const response = await request;
    expect(response.status).toBe(413);
    expect((await response.json<{ errors: string[] }>()).errors[0]).toBe('the request body is over 8192 bytes; at most 8192 are accepted here');
    expect(pulled()).toBeLessThanOrEqual(64 * 1024);
  });
});
