import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readRegistryConfig } from '../config';
import { openLocalStore } from '../stores/local';
import { publishRelease, type PublishOptions, type PublishResult } from '../provider/publish';
import { publishDemoModule } from './module';
import { zipBuffers } from '../provider/zip-binary';
import { archiveFilename, executableName, manifestFilename } from '../../../src/protocol/release-files';
import { demoCodeSpec } from './provider-docs';
import { parsePlatformName } from '../../../src/protocol/index';

/**
 * The sample provider `demo/example` (`npm run demo`): several versions and
 * platforms of tiny fake executables, published into local state through
 * publishRelease. The zips are byte-for-byte reproducible, so a re-run finds
 * every version unchanged.
 */

export const DEMO_NAMESPACE = 'demo';
export const DEMO_TYPE = 'example';
export const DEMO_VERSIONS = ['1.0.0', '1.1.0', '1.2.0', '2.0.0-beta.1'] as const;
export const DEMO_PLATFORMS = ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'] as const;

/**
 * Writes a goreleaser-style dist/ for one demo version into `dir`: a zip per
 * platform holding `terraform-provider-example_vVERSION` (a shell script that
 * prints its name) and a manifest (protocol 6.0 from 2.x, 5.0 before).
 */
export async function writeDemoDist(dir: string, version: string, platforms: readonly string[] = DEMO_PLATFORMS, type = DEMO_TYPE): Promise<void> {
  for (const name of platforms) {
    const platform = parsePlatformName(name);
    const executable = executableName(type, version, platform);
    const zip = await zipBuffers({
      [executable]: `#!/bin/sh\n# demo provider: not a real Terraform plugin\necho "terraform-provider-${type} ${version} ${name}"\n`,
      'README.md': `Demo provider ${type} ${version} for ${name}; published by npm run demo.\n`,
    });
    writeFileSync(join(dir, archiveFilename(type, version, platform)), zip);
  }
  const protocols = Number(version.split('.')[0]) >= 2 ? ['6.0'] : ['5.0'];
  writeFileSync(join(dir, manifestFilename(type, version)), `${JSON.stringify({ version: 1, metadata: { protocol_versions: protocols } }, null, 2)}\n`);
}

/**
 * Publishes every demo version into the local state of `options` (config,
 * persistTo, keysDir as for publishRelease). Returns the results in version
 * order; idempotent.
 */
export async function publishDemo(options: Pick<PublishOptions, 'configPath' | 'persistTo' | 'keysDir' | 'log' | 'processEnv'> = {}): Promise<PublishResult[]> {
  const config = await readRegistryConfig({ configPath: options.configPath, persistTo: options.persistTo });
  const store = await openLocalStore(config);
  const work = mkdtempSync(join(tmpdir(), 'edge-registry-demo-'));
  try {
    const results: PublishResult[] = [];
    for (const version of DEMO_VERSIONS) {
      const dist = join(work, version);
      mkdirSync(dist);
      await writeDemoDist(dist, version);
      const docs = join(work, `${version}-spec.json`);
      writeFileSync(docs, JSON.stringify(demoCodeSpec(version)));
      results.push(await publishRelease({ ...options, paths: [dist], namespace: DEMO_NAMESPACE, config, store, docs }));
    }
    // The demo module (demo/vpc/aws, two versions with a submodule): see scripts/lib/demo/module.ts.
    await publishDemoModule(store, config, options.log);
    return results;
  } finally {
    rmSync(work, { recursive: true, force: true });
    await store.close();
  }
}
