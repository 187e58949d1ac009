import { describe, expect, it } from 'vitest';
import { moduleAddress } from '../../../src/protocol/modules-v1';
import { publishVersions } from '../../../src/store/providers/write';
import { seedModule } from '../../fixtures/modules';
import { fakeRelease, signRelease } from '../../fixtures/release';
import { address } from '../helpers';
import { at, bindings, expectNoFailures, mirrorInstallFailures, moduleInstallFailures, production, providerInstallFailures } from './scenario';

// Rule: KV is cached per location, found or not found, for cacheTtl (60 s), each key on its own.
// Scenario: a provider and a module are published at location A while location B polls; at every step,
// every version listed at a location installs there (providers.v1, the network mirror, modules.v1).

const PLATFORMS = ['linux_amd64', 'darwin_arm64'];

describe('a version published at A while B polls', () => {
  it('installs wherever it is listed, at every moment', async () => {
    const p = production();
    const thing = address('poll', 'thing');
    const vpc = moduleAddress(bindings.REGISTRY_HOSTNAME, 'poll', 'vpc', 'aws');
    const release = async (version: string) => signRelease(fakeRelease(thing, version, PLATFORMS));
    await p.run('A', (env) => publishVersions({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, []), 'nothing');
    const first = await release('1.0.0');
    await p.run('A', (env) => publishVersions({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, [first]), 'publish 1.0.0');
    await p.run('A', (env) => seedModule(env.REGISTRY_KV, env.REGISTRY_R2, vpc, '1.0.0'), 'publish module 1.0.0');
    p.clock.advance(61_000);

    const failures: string[] = [];
    const poll = async (location: string) => {
      failures.push(...(await providerInstallFailures(p, location, 'poll', 'thing')));
      failures.push(...(await mirrorInstallFailures(p, location, 'poll', 'thing')));
      failures.push(...(await moduleInstallFailures(p, location, 'poll', 'vpc', 'aws')));
    };
    // B reads the lists, then (10 s later) polls for 1.1.0, which is not published yet: its misses are cached at B.
    await poll('B');
    p.clock.advance(10_000);
    const base = `/v1/mirror/${bindings.REGISTRY_HOSTNAME}/poll/thing`;
    expect((await at(p, 'B', '/v1/providers/poll/thing/1.1.0/download/linux/amd64')).status).toBe(404);
    expect((await at(p, 'B', `${base}/1.1.0.json`)).status).toBe(404);
    expect((await at(p, 'B', '/v1/modules/poll/vpc/aws/1.1.0/download')).status).toBe(404);

    const second = await release('1.1.0');
    await p.run('A', (env) => publishVersions({ kv: env.REGISTRY_KV, blobs: env.REGISTRY_R2 }, [second]), 'publish 1.1.0');
    await p.run('A', (env) => seedModule(env.REGISTRY_KV, env.REGISTRY_R2, vpc, '1.1.0'), 'publish module 1.1.0');
    for (let t = 0; t <= 70_000; t += 5_000) {
      await poll('A');
      await poll('B');
      p.clock.advance(5_000);
    }
    expect(failures).toEqual([]);
    // And once every cached copy has expired, B lists 1.1.0 everywhere.
    expect((await at(p, 'B', '/v1/providers/poll/thing/versions')).text).toContain('"1.1.0"');
    expect((await at(p, 'B', `${base}/index.json`)).text).toContain('"1.1.0"');
    expect((await at(p, 'B', '/v1/modules/poll/vpc/aws/versions')).text).toContain('"1.1.0"');
    expectNoFailures(p);
  }, 120_000);
});
