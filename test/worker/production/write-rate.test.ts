import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { catalogKey } from '../../../src/store/layout';
import { changeProviderLifecycle } from '../../../src/store/lifecycle/providers';
import { storeMirroredVersion } from '../../../src/store/mirror/write';
import { publishVersion, rebuildProviderIndex } from '../../../src/store/providers/write';
import type { Store } from '../../../src/store/store';
import { fakeRelease, signRelease } from '../../fixtures/release';
import { address } from '../helpers';
import { at, expectNoFailures, mirrorInstallFailures, production, providerInstallFailures } from './scenario';

// Rule: KV accepts at most one write a second to the same key; a faster write throws (429).
// Scenarios: publishes, a mirror sync and lifecycle changes that rewrite shared keys (the version lists,
// pages/catalog) within a second. Nothing fails, nothing is lost: every provider ends up listed and installs.

const storeOf = (e: { REGISTRY_KV: KVNamespace; REGISTRY_R2: R2Bucket }): Store => ({ kv: e.REGISTRY_KV, blobs: e.REGISTRY_R2 });

describe('writes within a second', () => {
  it('10 publishes of 10 different providers within one second all succeed and all reach the catalogue', async () => {
    const p = production();
    // The catalogue exists (an earlier publish), as it does on any registry in use.
    const first = await signRelease(fakeRelease(address('burst', 'first'), '1.0.0', ['linux_amd64']));
    await p.run('A', (e) => publishVersion(storeOf(e), first.record, first.files), 'publish first');
    p.clock.advance(2_000);
    const releases = await Promise.all(Array.from({ length: 10 }, (_, i) => signRelease(fakeRelease(address('burst', `p${i}`), '1.0.0', ['linux_amd64']))));
    const outcomes = await Promise.allSettled(
      releases.map((release, i) => p.run(`L${i}`, (e) => publishVersion(storeOf(e), release.record, release.files), `publish p${i}`)),
    );
    expect(outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
    // The catalogue's KV copy (what the home page serves) names all ten.
    const catalog = (await env.REGISTRY_KV.get(catalogKey, 'text')) ?? '';
    for (let i = 0; i < 10; i++) expect(catalog, `p${i} in pages/catalog`).toContain(`"p${i}"`);
    p.clock.advance(61_000);
    for (let i = 0; i < 10; i++) expect(await providerInstallFailures(p, 'Z', 'burst', `p${i}`)).toEqual([]);
    expectNoFailures(p);
  }, 120_000);

  it('two versions of one provider published back to back, then deprecated and withdrawn while clients read', async () => {
    const p = production();
    const thing = address('burst', 'lifecycle');
    const [one, two] = await Promise.all(['1.0.0', '1.1.0'].map((v) => signRelease(fakeRelease(thing, v, ['linux_amd64']))));
    await p.run('A', (e) => publishVersion(storeOf(e), one!.record, one!.files), 'publish 1.0.0');
    await p.run('A', (e) => publishVersion(storeOf(e), two!.record, two!.files), 'publish 1.1.0');
    const reads = (async () => {
      const failures: string[] = [];
      for (let i = 0; i < 6; i++) {
        failures.push(...(await providerInstallFailures(p, 'B', 'burst', 'lifecycle')), ...(await mirrorInstallFailures(p, 'B', 'burst', 'lifecycle')));
        p.clock.advance(10_000);
      }
      return failures;
    })();
    await p.run('A', (e) => changeProviderLifecycle(storeOf(e), thing, { kind: 'deprecate', version: '1.0.0', message: 'use 1.1.0' }), 'deprecate');
    await p.run('A', (e) => changeProviderLifecycle(storeOf(e), thing, { kind: 'withdraw', version: '1.0.0', message: 'broken' }), 'withdraw');
    expect(await reads).toEqual([]);
    p.clock.advance(61_000);
    const list = await at(p, 'B', '/v1/providers/burst/lifecycle/versions');
    expect(list.text).not.toContain('"1.0.0"');
    expect(list.text).toContain('"1.1.0"');
    expectNoFailures(p);
  }, 120_000);

  it("a 50-version mirror sync's writes (CLI: KV's rules, no invocation limit) and the rebuild after it", async () => {
    const p = production();
    const upstream = address('syncns', 'big', 'upstream.example.com');
    const releases = await Promise.all(Array.from({ length: 50 }, (_, i) => signRelease(fakeRelease(upstream, `1.${i}.0`, ['linux_amd64', 'darwin_arm64']))));
    await p.run(
      'CLI',
      async (e) => {
        for (const release of releases) await storeMirroredVersion(storeOf(e), release.record, release.files);
        await rebuildProviderIndex(storeOf(e), upstream);
      },
      'mirror sync of 50 versions',
      { limited: false },
    );
    expect([...p.kv.refusedWrites]).toEqual([]);
    p.clock.advance(61_000);
    const index = await at(p, 'B', '/v1/mirror/upstream.example.com/syncns/big/index.json');
    expect(Object.keys(JSON.parse(index.text).versions)).toHaveLength(50);
    expectNoFailures(p);
  }, 120_000);
});
