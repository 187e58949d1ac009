import { randomFillSync } from 'node:crypto';
import { fakeRelease } from '../test/fixtures/release';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProviderAddress } from '../src/protocol/address';
import { mapLimit } from '../src/concurrency';
import { moduleAddress, type ModuleAddress } from '../src/protocol/modules-v1';
import { publishVersion, rebuildProviderIndex } from '../src/store/providers/write';
import { committedRecordKey, moduleArchiveFilename, moduleCommittedRecordKey, releaseFilePath } from '../src/store/layout';
import { rebuildModuleIndex } from '../src/store/modules/lists';
import { commitRecord } from '../src/store/records';
import { archiveFilename } from '../src/protocol/release-files';
import type { BlobStore, KvStore, Store } from '../src/store/store';
import { seedModule } from '../test/fixtures/modules';
import { zipStored } from '../test/fixtures/archives';
import { writeDemoModule } from '../scripts/lib/demo/module';
import type { Runtime } from './runtime';

/** The benches' data: seeded through the store module's write paths (publishVersion, committed records), or release directories. */

export const HOSTNAME = 'registry.example.com';
const PLATFORM_NAMES =
  'linux_amd64 linux_arm64 linux_386 linux_arm darwin_amd64 darwin_arm64 windows_amd64 windows_386 windows_arm64 freebsd_amd64 freebsd_386 freebsd_arm';
/** The 12 platforms of the seeded providers. */
export const PLATFORMS = PLATFORM_NAMES.split(' ');

/** The runtime's KV and R2 as the store code takes them. */
export async function stores(runtime: Runtime): Promise<Store> {
  return {
    kv: (await runtime.mf.getKVNamespace('REGISTRY_KV')) as unknown as KvStore,
    blobs: (await runtime.mf.getR2Bucket('REGISTRY_R2')) as unknown as BlobStore,
  };
}

/** One provider with one version × 12 platforms, published in full. */
export async function seedSmall(runtime: Runtime, address: ProviderAddress, version: string): Promise<void> {
  const release = fakeRelease(address, version, PLATFORMS);
  await publishVersion(await stores(runtime), release.record, release.files);
}

/** `count` versions 0.0.0, 0.0.1, … 0.9.99, 0.10.0 …: the versions the record seeders below commit. */
const seededVersions = (count: number) => Array.from({ length: count }, (_, i) => `0.${Math.floor(i / 100)}.${i % 100}`);

/**
 * `count` committed version records of `address` (versions 0.x.y, `platforms` each), the source of truth the
 * lists are built from (their files and per-version documents are never requested), then the lists rebuilt once
 * (the store's repair path).
 */
export async function seedProviderRecords(store: Store, address: ProviderAddress, count: number, platforms: readonly string[] = PLATFORMS): Promise<void> {
  await mapLimit(seededVersions(count), 16, (version) =>
    commitRecord(store.blobs, committedRecordKey(address, version), fakeRelease(address, version, [...platforms], { archiveSize: 64 }).record),
  );
  await rebuildProviderIndex(store, address, () => {});
}

/** The same for a module: `count` committed records (versions 0.x.y), then its lists rebuilt. */
export async function seedModuleRecords(store: Store, address: ModuleAddress, count: number): Promise<void> {
  await mapLimit(seededVersions(count), 16, (version) =>
    commitRecord(store.blobs, moduleCommittedRecordKey(address, version), {
      address,
      version,
      filename: moduleArchiveFilename(address, version, 'tar.gz'),
      format: 'tar.gz',
      sha256: '0'.repeat(64),
      size: 1,
      publishedAt: new Date(0).toISOString(),
    }),
  );
  await rebuildModuleIndex(store, address, () => {});
}

/** One provider with `count` versions × 12 platforms: count − 1 committed records, then the newest (1.0.0) published in full. */
export async function seedLarge(runtime: Runtime, address: ProviderAddress, count: number): Promise<string> {
  const store = await stores(runtime);
  await seedProviderRecords(store, address, count - 1);
  const release = fakeRelease(address, '1.0.0', PLATFORMS, { archiveSize: 64 });
  await publishVersion(store, release.record, release.files);
  return '1.0.0';
}

/** modules.v1 routes of what seedModules stores: bench/net/aws with one version, bench/big/aws with 1,000. */
const moduleRoutes = (name: string) => [
  { name: 'module versions', path: `/v1/modules/bench/${name}/aws/versions` },
  { name: 'module download', path: `/v1/modules/bench/${name}/aws/1.0.0/download` },
];
export const MODULE_ROUTES = { small: moduleRoutes('net'), large: moduleRoutes('big') };

/** bench/net/aws with one version and bench/big/aws with 1,000 (999 committed records, then 1.0.0 published in full). */
export async function seedModules(runtime: Runtime): Promise<void> {
  const store = await stores(runtime);
  await seedModule(store.kv, store.blobs, moduleAddress(HOSTNAME, 'bench', 'net', 'aws'), '1.0.0');
  const big = moduleAddress(HOSTNAME, 'bench', 'big', 'aws');
  await seedModuleRecords(store, big, 999);
  await seedModule(store.kv, store.blobs, big, '1.0.0');
}

/** A module directory of `version`: the demo module and `bytes` of random data in files/data.bin. */
export function writeModule(dir: string, version: string, bytes: number): string {
  writeDemoModule(dir, version);
  mkdirSync(join(dir, 'files'), { recursive: true });
  writeFileSync(join(dir, 'files', 'data.bin'), randomFillSync(Buffer.alloc(bytes)));
  return dir;
}

/** A release directory of `version` (1 MiB by default): three stored zips of random bytes, and goreleaser's manifest. */
export function writeRelease(dir: string, version: string, releaseBytes = 1 << 20, type = 'bench'): string {
  mkdirSync(dir, { recursive: true });
  const platforms = ['linux_amd64', 'darwin_arm64', 'windows_amd64'];
  const overhead = 200; // a stored zip's headers around one entry with a ~40-byte name
  for (const platform of platforms) {
    const exe = `terraform-provider-${type}_v${version}${platform.startsWith('windows') ? '.exe' : ''}`;
    const zip = zipStored({ [exe]: randomFillSync(Buffer.alloc(Math.floor(releaseBytes / platforms.length) - overhead)) });
    writeFileSync(join(dir, `terraform-provider-${type}_${version}_${platform}.zip`), zip);
  }
  writeFileSync(join(dir, `terraform-provider-${type}_${version}_manifest.json`), JSON.stringify({ version: 1, metadata: { protocol_versions: ['6.0'] } }));
  return dir;
}

/** URL path of a version's linux_amd64 archive. */
export function archivePath(address: ProviderAddress, version: string): string {
  return releaseFilePath(address, version, archiveFilename(address.type, version, { os: 'linux', arch: 'amd64' }));
}
