import { moduleAddress } from '../src/protocol/modules-v1';
import { moduleRecordKey } from '../src/store/layout';
import { rebuildModuleIndex } from '../src/store/modules/lists';
import { seedModule } from '../test/fixtures/modules';
import { HOSTNAME, stores } from './seed';
import type { Runtime } from './runtime';

/**
 * Modules for `npm run bench`: bench/net/aws with one version and
 * bench/big/aws with 1,000 (records only, except the newest, published in
 * full through the store's write path, then the list rebuilt from all).
 */

export const MODULE_ROUTES = {
  small: [
    { name: 'module versions', path: '/v1/modules/bench/net/aws/versions' },
    { name: 'module download', path: '/v1/modules/bench/net/aws/1.0.0/download' },
  ],
  large: [
    { name: 'module versions', path: '/v1/modules/bench/big/aws/versions' },
    { name: 'module download', path: '/v1/modules/bench/big/aws/10.99.0/download' },
  ],
};

export async function seedModules(runtime: Runtime): Promise<void> {
  const { kv, r2 } = await stores(runtime);
  await seedModule(kv, r2, moduleAddress(HOSTNAME, 'bench', 'net', 'aws'), '1.0.0');
  const big = moduleAddress(HOSTNAME, 'bench', 'big', 'aws');
  const versions = Array.from({ length: 1000 }, (_, i) => `${Math.floor(i / 100) + 1}.${i % 100}.0`);
  const newest = versions.pop()!;
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < versions.length) {
        const version = versions[next++]!;
        await kv.put(moduleRecordKey(big, version), JSON.stringify({ address: big, version }));
      }
    }),
  );
  await seedModule(kv, r2, big, newest, { rebuildIndex: false });
  await rebuildModuleIndex({ kv, blobs: r2 }, big, () => {});
}
