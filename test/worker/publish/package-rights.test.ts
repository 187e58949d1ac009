import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { listAuditEntries } from '../../../src/store/audit/read';
import type { BlobStore } from '../../../src/store/store';
import { address, fakeRelease, get, seed } from '../helpers';
import { bearer, buildRelease, HOST, issue, manifestOf, publishRelease, registerFixtureKey, startPublish } from './api';

/**
 * Least privilege per package with publish tokens (trusted publishers: ci-hijack.test.ts): a token created for
 * `rights/thing` publishes and changes that provider and nothing else of its namespace — not another provider, not a
 * module, not another's lifecycle; a pattern covers what it names; a token created before per-package rights
 * publishes nothing and says how to replace it. Every refusal writes nothing and is audited with the token.
 */
beforeAll(async () => {
  await registerFixtureKey('rights');
  await seed([fakeRelease(address('rights', 'victim'), '1.0.0', ['linux_amd64'])]);
});

const post = (path: string, token: string, body: unknown) =>
  get(path, { method: 'POST', headers: bearer(token, { 'content-type': 'application/json' }), body: JSON.stringify(body) });
const listed = async (type: string) => {
  const response = await get(`/v1/providers/rights/${type}/versions`);
  return response.status === 200 ? ((await response.json()) as { versions: { version: string }[] }).versions.map((v) => v.version) : [];
};
const refusals = async (tokenId: string) =>
  (await listAuditEntries({ blobs: env.REGISTRY_R2 as unknown as BlobStore }, { namespace: 'rights' })).entries.filter(
    (e) => e.outcome === 'refused' && e.actor.kind === 'token' && e.actor.tokenId === tokenId,
  );

describe('a publish token names its packages', { timeout: 60_000 }, () => {
  it('publishes the provider named for it, and is refused (403, nothing written) for another provider, a module and another lifecycle', async () => {
    const { token, id } = await issue('publish', ['rights/thing'], { name: 'thing-release' });
    const own = await buildRelease('thing', '1.0.0');
    expect((await publishRelease(token, 'rights', own)).committed?.status).toBe(200);
    expect(await listed('thing')).toEqual(['1.0.0']);

    const other = await buildRelease('victim', '9.9.9');
    const refused = await startPublish(token, 'rights', other, await manifestOf(other));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { errors: string[] }).errors[0]).toBe(
      'this publish token may not publish or change rights/victim; it may: packages rights/thing',
    );
    const module = await get('/v1/publish/modules/rights/thing/aws/1.0.0', {
      method: 'POST',
      headers: bearer(token, { 'content-type': 'application/json' }),
      body: JSON.stringify({ format: 'zip', size: 1, sha256: '0'.repeat(64) }),
    });
    expect(module.status).toBe(403);
    const withdraw = await post('/v1/publish/lifecycle/providers/rights/victim', token, { action: 'withdraw', version: '1.0.0', message: 'hostile' });
    expect(withdraw.status).toBe(403);
    expect(await listed('victim')).toEqual(['1.0.0']);
    expect((await env.REGISTRY_R2.list({ prefix: `${HOST}/rights/victim/9.9.9/` })).objects).toEqual([]);
    // Its own lifecycle it may change.
    expect((await post('/v1/publish/lifecycle/providers/rights/thing', token, { action: 'deprecate', message: 'use 2.x' })).status).toBe(200);
    expect((await refusals(id)).map((e) => e.action).sort()).toEqual(['lifecycle.change', 'module.publish', 'provider.publish']);
  });

  it('a pattern covers what it names: rights/mod-* publishes rights/mod-a, not rights/model-b of another shape or a module', async () => {
    const { token } = await issue('publish', ['rights/mod-*']);
    const a = await buildRelease('mod-a', '1.0.0');
    expect((await startPublish(token, 'rights', a, { ...(await manifestOf(a)), dry_run: true })).status).toBe(200);
    const b = await buildRelease('model-b', '1.0.0');
    expect((await startPublish(token, 'rights', b, { ...(await manifestOf(b)), dry_run: true })).status).toBe(403);
    const module = await post('/v1/publish/lifecycle/modules/rights/mod-a/aws', token, { action: 'deprecate', message: 'x' });
    expect(module.status).toBe(403);
  });

  it('a token created before per-package rights publishes nothing, and says how to replace it', async () => {
    const { token, id } = await issue('publish', ['rights'], { legacy: true });
    const release = await buildRelease('thing', '2.0.0');
    const refused = await startPublish(token, 'rights', release, await manifestOf(release));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { errors: string[] }).errors[0]).toMatch(
      new RegExp(
        `created before publish rights were per package and publishes nothing: .*npm run token -- create --publish rights/thing.*npm run token -- revoke ${id}`,
      ),
    );
    expect(await listed('thing')).toEqual(['1.0.0']);
  });

  it('namespace-wide, said explicitly, publishes every package of its namespace and no other namespace', async () => {
    const { token } = await issue('publish', ['rights']);
    const any = await buildRelease('anything', '1.0.0');
    expect((await startPublish(token, 'rights', any, { ...(await manifestOf(any)), dry_run: true })).status).toBe(200);
    expect((await startPublish(token, 'acme', any, { ...(await manifestOf(any)), dry_run: true })).status).toBe(403);
  });
});
