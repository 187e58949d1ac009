import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../scripts/lib/config';
import { InputError } from '../../src/protocol/errors';
import { configPath, tempDir } from './helpers';

const work = tempDir('config');
afterAll(() => work.cleanup());

describe('wrangler.toml as the scripts read it (scripts/lib/config.ts)', () => {
  it('reads the bindings of the top level and of an environment, and sees every edit at once (the cache is keyed by the bytes)', async () => {
    const path = join(work.dir, 'wrangler.toml');
    const original = readFileSync(configPath, 'utf8');
    writeFileSync(path, original);
    for (let round = 0; round < 2; round++) {
      // The second round is answered from the cache: the same answers.
      expect(await readRegistryConfig({ configPath: path })).toMatchObject({
        hostname: 'registry.example.com',
        kvNamespaceId: 'edge-registry-local',
        bucketName: 'edge-registry',
      });
      expect(await readRegistryConfig({ configPath: path, env: 'production' })).toMatchObject({ kvNamespaceId: '00000000000000000000000000000000' });
    }
    writeFileSync(path, original.replace(/^REGISTRY_HOSTNAME = "registry\.example\.com"/m, 'REGISTRY_HOSTNAME = "tf.acme.test"'));
    expect((await readRegistryConfig({ configPath: path })).hostname).toBe('tf.acme.test');
    expect((await readRegistryConfig({ configPath: path, env: 'production' })).hostname).toBe('registry.example.com');

    writeFileSync(path, original.replace(/\[\[r2_buckets\]\]\nbinding = "REGISTRY_R2"/, '[[r2_buckets]]\nbinding = "OTHER"'));
    for (let round = 0; round < 2; round++) {
      const error = await readRegistryConfig({ configPath: path }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      expect((error as Error).message).toMatch(/wrangler\.toml: no r2_buckets entry with binding "REGISTRY_R2" and a bucket_name/);
    }
  });
});
