/**
 * `npm run bench:publish-api`: wall time of a publish through the publish API (`publish-provider --registry`,
 * the real CLI code in this process) of a small 3-platform release into a provider that has 1 version and into
 * one that has 200, against the built Worker in workerd (bench/runtime.ts). Prints one line per case and, with
 * --json, an object. The 200 versions are seeded through the store's own write path.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newToken, tokenId, tokenSha256 } from '../src/auth/tokens';
import { providerAddress } from '../src/protocol/address';
import { publishVersions, writeSigningKeys } from '../src/store/providers/write';
import type { BlobStore, KvStore } from '../src/store/store';
import { writeTokenRecord } from '../src/store/tokens/write';
import { publishRelease } from '../scripts/lib/provider/publish';
import { fakeRelease } from '../test/fixtures/release';
import { writeDist, writeKeyFile } from '../test/scripts/helpers';
import { build } from './build';
import { startRuntime } from './runtime';

const HOST = 'registry.example.com';

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-bench-publish-api-'));
  const runtime = await startRuntime({ bundlePath: await build(work, null) });
  try {
    const kv = await runtime.mf.getKVNamespace('REGISTRY_KV') as unknown as KvStore;
    const blobs = await runtime.mf.getR2Bucket('REGISTRY_R2') as unknown as BlobStore;
    const token = newToken();
    const sha256 = tokenSha256(token);
    await writeTokenRecord(kv, { id: tokenId(sha256), name: 'bench', sha256, scopes: ['acme'], created: new Date().toISOString(), expires: null, purpose: 'publish' });
    const key = await writeKeyFile(work, 'bench.asc', 'ecc');
    await writeSigningKeys(kv, HOST, 'acme', [{ key_id: key.keyId, ascii_armor: key.publicArmor }]);

    // Provider "many" gets 199 versions first (one platform each), so the timed publish makes it 200.
    const many = providerAddress(HOST, 'acme', 'many');
    const seeded = Array.from({ length: 199 }, (_, i) => fakeRelease(many, `0.${Math.floor(i / 10)}.${i % 10}`, ['linux_amd64'], { archiveSize: 256 }));
    for (let i = 0; i < seeded.length; i += 40) await publishVersions({ kv, blobs }, seeded.slice(i, i + 40));

    const results: { versionsAfter: number; seconds: number; status: string }[] = [];
    for (const [type, versionsAfter] of [['one', 1], ['many', 200]] as const) {
      const dist = await writeDist(join(work, `dist-${type}`), type, '1.0.0');
      const started = performance.now();
      const result = await publishRelease({
        paths: [dist], namespace: 'acme', keyFile: key.path, registry: runtime.origin,
        processEnv: { ...process.env, EDGE_REGISTRY_TOKEN: token, EDGE_REGISTRY_SIGNING_KEY: '' },
      });
      const seconds = (performance.now() - started) / 1000;
      results.push({ versionsAfter, seconds, status: result.status });
      if (!json) console.log(`publish-provider --registry, 3 platforms, into a provider with ${versionsAfter} version${versionsAfter === 1 ? '' : 's'} after it: ${seconds.toFixed(2)} s (${result.status})`);
    }
    if (json) console.log(JSON.stringify({ apiPublish: results }));
  } finally {
    await runtime.dispose();
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
