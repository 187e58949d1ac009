import { randomFillSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readRegistryConfig } from '../scripts/lib/config';
import { openLocalStore } from '../scripts/lib/stores/local';
import { writeDemoModule } from '../scripts/lib/demo/module';
import { publishModule } from '../scripts/lib/module/publish';

/**
 * `npm run publish-module` figures: wall time of a local publish (pack,
 * docs, SHA-256, upload, documents, lists) of a module carrying 1 MB and
 * 50 MB of incompressible data, through the CLI's own function, into a fresh
 * local state.
 */

export interface ModulePublishFigures {
  sizes: { mb: number; packageBytes: number; seconds: number }[];
}

export async function benchModulePublish(work: string, sizesMb: number[] = [1, 50]): Promise<ModulePublishFigures> {
  const config = await readRegistryConfig({ persistTo: join(work, 'module-publish-state') });
  const store = await openLocalStore(config);
  try {
    const sizes: ModulePublishFigures['sizes'] = [];
    for (const mb of sizesMb) {
      const dir = join(work, `module-${mb}mb`);
      writeDemoModule(dir, '1.0.0');
      mkdirSync(join(dir, 'files'), { recursive: true });
      writeFileSync(join(dir, 'files', 'data.bin'), randomFillSync(Buffer.alloc(mb * 1_000_000)));
      const started = performance.now();
      const result = await publishModule({ path: dir, namespace: 'bench', name: `m${mb}`, system: 'aws', version: '1.0.0', store, config });
      sizes.push({ mb, packageBytes: result.size, seconds: (performance.now() - started) / 1000 });
    }
    return { sizes };
  } finally {
    await store.close();
  }
}
