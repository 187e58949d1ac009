import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../../scripts/lib/config';
import { openLocalStore } from '../../../scripts/lib/stores/local';
import { parsePublisherInput } from '../../../src/access/publishers';
import { parsePolicy } from '../../../src/protocol/mirror-policy';
import { moduleRuleOverlaps } from '../../../src/store/mirror/module-overlap';
import { publishModuleVersion } from '../../../src/store/modules/write';
import { committedRecordKey } from '../../../src/store/layout';
import type { ModuleVersionRecord } from '../../../src/store/modules/types';
import { writePublishers } from '../../../src/store/publishers/write';
import { configPath, runScript, tempDir } from '../helpers';

/**
 * A module proxy rule may not serve an upstream's modules in a namespace we
 * publish into (an upstream author could add a higher version of a module of
 * ours there): `npm run mirror -- policy set` refuses it with nothing stored.
 * What counts as "we publish into": src/store/mirror/module-overlap.ts.
 */
const { dir, cleanup } = tempDir('module-overlap');
afterAll(cleanup);
const state = ['--persist-to', join(dir, 'state'), '--wrangler-config', configPath];
const docs = { inputs: [], outputs: [], providers: [], requiredVersion: null, submodules: [], readmeHtml: null };
const bytes = new TextEncoder().encode('package bytes');
const sha = '6c4d0d9b8d7c0b5e1d3bfa5a1cdb9f5c7e8e4b9a2a8f1e3d5c7b9a0f2e4d6c8b';

const policy = (as: string, source = 'registry.terraform.io/terraform-aws-modules/*/*') =>
  parsePolicy(JSON.stringify({ modules: [{ source, versions: '>= 1', as }] }), 'mirror.json');

describe('a module proxy rule overlapping a namespace we publish into', () => {
  it('is found for our own modules, providers and trusted publishers; not for versions the proxy stored, nor other names', async () => {
    const config = await readRegistryConfig({ configPath, persistTo: join(dir, 'state') });
    const host = config.hostname;
    const store = await openLocalStore(config);
    try {
      const record = (namespace: string, name: string, extra: Partial<ModuleVersionRecord> = {}): ModuleVersionRecord => ({
        address: { hostname: host, namespace, name, system: 'aws' },
        version: '1.0.0',
        filename: `${name}-aws-1.0.0.tar.gz`,
        format: 'tar.gz',
        sha256: sha,
        size: bytes.length,
        publishedAt: new Date().toISOString(),
        ...extra,
      });
      const content = { sha256Hex: sha, size: bytes.length, contentType: 'application/gzip', open: () => bytes };
      await publishModuleVersion(store, record('internal', 'vpc'), docs, content);
      await publishModuleVersion(store, record('proxied', 'vpc', { proxiedFrom: 'registry.terraform.io/terraform-aws-modules/vpc/aws' }), docs, content);

      expect(await moduleRuleOverlaps(store, host, policy('internal'), null)).toEqual([
        {
          namespace: 'internal',
          source: 'registry.terraform.io/terraform-aws-modules/*/*',
          what: `module ${host}/internal/vpc/aws 1.0.0 is published here`,
        },
      ]);
      // Only modules the rule would serve: another name is no overlap.
      expect(await moduleRuleOverlaps(store, host, policy('internal', 'registry.terraform.io/terraform-aws-modules/eks/aws'), null)).toEqual([]);
      // Versions the proxy stored are the proxy's.
      expect(await moduleRuleOverlaps(store, host, policy('proxied'), null)).toEqual([]);
      expect(await moduleRuleOverlaps(store, host, policy('fresh'), null)).toEqual([]);
      // A namespace holding a provider of ours (its committed record, as publishVersion names it).
      await store.blobs.put(committedRecordKey({ hostname: host, namespace: 'providers-here', type: 'thing' }, '1.0.0'), '{}');
      expect((await moduleRuleOverlaps(store, host, policy('providers-here'), null))[0]?.what).toBe(`providers are published in ${host}/providers-here`);
      // A namespace with a trusted publisher: its CI jobs publish into it.
      await writePublishers(store, host, 'ci-owned', [
        await parsePublisherInput({
          issuer: 'https://token.actions.githubusercontent.com',
          repository: 'acme/terraform-aws-x',
          workflow: 'release.yml',
          ref: 'refs/tags/v*',
          repositoryId: '1',
          ownerId: '2',
          packages: ['ci-owned/x/aws'],
        }),
      ]);
      expect((await moduleRuleOverlaps(store, host, policy('ci-owned'), null))[0]?.what).toBe(
        `${host}/ci-owned has trusted publishers (CI jobs publish into it)`,
      );
    } finally {
      await store.close();
    }

    // The command: refused naming the rule, the namespace, what is published there and the fix; nothing stored.
    writeFileSync(join(dir, 'mirror.json'), JSON.stringify({ modules: [{ source: 'terraform-aws-modules/*/*', versions: '>= 1', as: 'internal' }] }));
    const refused = await runScript('mirror', ['policy', 'set', join(dir, 'mirror.json'), ...state]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `the module rule registry.terraform.io/terraform-aws-modules/*/* would proxy into ${host}/internal, where module ${host}/internal/vpc/aws 1.0.0 is published here`,
    );
    expect(refused.stderr).toContain('give the rule a namespace of its own with "as" (e.g. "as": "internal-upstream")');
    expect((await runScript('mirror', ['policy', 'show', ...state])).stderr).toMatch(/no pull-through policy/);
    writeFileSync(join(dir, 'mirror.json'), JSON.stringify({ modules: [{ source: 'terraform-aws-modules/*/*', versions: '>= 1', as: 'internal-upstream' }] }));
    const stored = await runScript('mirror', ['policy', 'set', join(dir, 'mirror.json'), ...state]);
    expect(stored.code, stored.stderr).toBe(0);
  });
});
