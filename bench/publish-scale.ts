import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readRegistryConfig } from '../scripts/lib/config';
import { openLocalStore } from '../scripts/lib/stores/local';
import { publishRelease } from '../scripts/lib/provider/publish';
import { zipBuffers } from '../scripts/lib/provider/zip-binary';
import { mapLimit } from '../src/concurrency';
import type { ProviderAddress } from '../src/protocol/address';
import { executableName } from '../src/protocol/release-files';
import { parsePlatformName } from '../src/protocol/platform';
import { committedRecordKey, moduleArchiveFilename, moduleCommittedRecordKey } from '../src/store/layout';
import { moduleAddress } from '../src/protocol/modules-v1';
import { rebuildModuleIndex } from '../src/store/modules/lists';
import { seedModule } from '../test/fixtures/modules';
import { rebuildProviderIndex } from '../src/store/providers/write';
import { writeSigningKeys } from '../src/store/providers/signing-keys';
import { commitRecord } from '../src/store/records';
import { countingStore, type StoreOperation } from '../test/fixtures/counting-store';
import { fakeRelease } from '../test/fixtures/release';
import { generateSigningKey } from '../scripts/lib/keys/keyring';

/**
 * What one provider publish costs as the provider's history grows: a
 * provider with N existing versions (N = 1, 100, 1,000; seeded fast by
 * committing their records through the store code and rebuilding the lists
 * once), then `publishRelease` of a new 3-platform version (small zips, so
 * the figure is the storage work, not hashing) into that local state, through
 * a store that counts every KV and R2 request (test/fixtures/counting-store.ts).
 * Reports per size: wall time (median of `publishes` publishes) and the
 * requests of the first publish by operation.
 */

export interface PublishScaleRow {
  existingVersions: number;
  /** Median wall time of the publishes, seconds. */
  seconds: number;
  requests: number;
  byOperation: Partial<Record<StoreOperation, number>>;
  /** Keys read more than once by the publish. */
  repeatedReads: number;
}

const HOST = 'registry.example.com';
const PLATFORMS = ['linux_amd64', 'darwin_arm64', 'windows_amd64'];

export async function benchPublishScale(
  work: string,
  sizes: readonly number[] = [1, 100, 1000],
  publishes = 3,
  log: (line: string) => void = () => {},
): Promise<PublishScaleRow[]> {
  const { armoredPrivateKey, publicKey } = await generateSigningKey({ name: 'bench', type: 'ecc' });
  const keyFile = join(work, 'scale-key.asc');
  await writeFile(keyFile, armoredPrivateKey, { mode: 0o600 });
  const rows: PublishScaleRow[] = [];
  for (const size of sizes) {
    const persistTo = join(work, `scale-${size}`);
    const config = await readRegistryConfig({ persistTo });
    const handle = await openLocalStore(config);
    try {
      const address: ProviderAddress = { hostname: HOST, namespace: 'scale', type: 'thing' };
      const started = Date.now();
      await writeSigningKeys(handle.kv, HOST, 'scale', [publicKey]);
      await mapLimit(
        Array.from({ length: size }, (_, i) => `0.${Math.floor(i / 100)}.${i % 100}`),
        16,
        async (version) => {
          const { record } = fakeRelease(address, version, PLATFORMS, { archiveSize: 64 });
          await commitRecord(handle.blobs, committedRecordKey(address, version), record);
        },
      );
      await rebuildProviderIndex(handle, address, () => {});
      log(`publish scale: seeded ${size} versions in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const counted = countingStore(handle);
      const times: number[] = [];
      let first: PublishScaleRow | null = null;
      for (let i = 0; i < publishes; i++) {
        const version = `1.0.${i}`;
        const dist = join(work, `scale-dist-${size}-${i}`);
        await mkdir(dist, { recursive: true });
        for (const name of PLATFORMS) {
          const zip = await zipBuffers({ [executableName('thing', version, parsePlatformName(name))]: `#!/bin/sh\necho ${version} ${name}\n` });
          await writeFile(join(dist, `terraform-provider-thing_${version}_${name}.zip`), zip);
        }
        counted.counter.reset();
        const t0 = process.hrtime.bigint();
        const result = await publishRelease({ paths: [dist], namespace: 'scale', hostname: HOST, keyFile, processEnv: {}, store: counted, config });
        times.push(Number(process.hrtime.bigint() - t0) / 1e9);
        if (result.status !== 'published') throw new Error(`publish scale: ${JSON.stringify(result)}`);
        if (process.env.SCALE_TRACE && i === 0) for (const r of counted.counter.requests) process.stderr.write(`  ${r.op} ${r.key}\n`);
        if (!first) {
          first = {
            existingVersions: size,
            seconds: 0,
            requests: counted.counter.requests.length,
            byOperation: counted.counter.byOperation(),
            repeatedReads: counted.counter.repeatedReads().size,
          };
        }
      }
      first!.seconds = times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
      log(`publish scale: ${size} versions: ${first!.seconds.toFixed(2)} s, ${first!.requests} storage requests ${JSON.stringify(first!.byOperation)}`);
      rows.push(first!);
    } finally {
      await handle.close();
    }
  }
  return rows;
}

/**
 * The same for a module publish (publishModuleVersion of a new version into
 * a module with N committed versions): storage requests only. Module lists
 * are still rebuilt from every record of the module, so these grow with N.
 */
export async function benchModulePublishScale(work: string, sizes: readonly number[], log: (line: string) => void = () => {}): Promise<PublishScaleRow[]> {
  const rows: PublishScaleRow[] = [];
  for (const size of sizes) {
    const config = await readRegistryConfig({ persistTo: join(work, `module-scale-${size}`) });
    const handle = await openLocalStore(config);
    try {
      const address = moduleAddress(HOST, 'scale', 'net', 'aws');
      await mapLimit(
        Array.from({ length: size }, (_, i) => `0.${Math.floor(i / 100)}.${i % 100}`),
        16,
        (version) =>
          commitRecord(handle.blobs, moduleCommittedRecordKey(address, version), {
            address,
            version,
            filename: moduleArchiveFilename(address, version, 'tar.gz'),
            format: 'tar.gz',
            sha256: '0'.repeat(64),
            size: 1,
            publishedAt: new Date(0).toISOString(),
          }),
      );
      await rebuildModuleIndex(handle, address, () => {});
      const counted = countingStore(handle);
      const t0 = process.hrtime.bigint();
      await seedModule(counted.kv, counted.blobs, address, '1.0.0');
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const row = {
        existingVersions: size,
        seconds,
        requests: counted.counter.requests.length,
        byOperation: counted.counter.byOperation(),
        repeatedReads: counted.counter.repeatedReads().size,
      };
      log(`module publish scale: ${size} versions: ${seconds.toFixed(2)} s, ${row.requests} storage requests ${JSON.stringify(row.byOperation)}`);
      rows.push(row);
    } finally {
      await handle.close();
    }
  }
  return rows;
}

// `npx tsx bench/publish-scale.ts [--modules] [SIZES…]`: the table alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { mkdtemp, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-scale-'));
  try {
    const sizes = process.argv
      .slice(2)
      .map(Number)
      .filter((n) => n > 0);
    const say = (line: string) => process.stderr.write(`${line}\n`);
    const rows = process.argv.includes('--modules')
      ? await benchModulePublishScale(work, sizes.length ? sizes : [1, 100, 1000], say)
      : await benchPublishScale(work, sizes.length ? sizes : undefined, 3, say);
    console.log(JSON.stringify(rows, null, 1));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
