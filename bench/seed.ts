import { createHash, randomFillSync } from 'node:crypto';
import { fakeRelease } from '../test/fixtures/release';
import { h1Hash } from '../src/protocol/hashes';
import type { ProviderAddress } from '../src/protocol/address';
import { publishVersion } from '../src/store/providers/write';
import { committedRecordKey, releaseFilePath } from '../src/store/layout';
import { commitRecord } from '../src/store/records';
import { archiveFilename, shasumsFilename, shasumsSignatureFilename } from '../src/protocol/release-files';
import type { BlobStore, KvStore } from '../src/store/store';
import type { VersionRecord } from '../src/store/types';
import type { Runtime } from './runtime';

/** Seeds the runtime's KV and R2 through the store module's write path (publishVersion). */

export const HOSTNAME = 'registry.example.com';
export const PLATFORMS = [
  'linux_amd64',
  'linux_arm64',
  'linux_386',
  'linux_arm',
  'darwin_amd64',
  'darwin_arm64',
  'windows_amd64',
  'windows_386',
  'windows_arm64',
  'freebsd_amd64',
  'freebsd_386',
  'freebsd_arm',
];

export async function stores(runtime: Runtime): Promise<{ kv: KvStore; r2: BlobStore }> {
  return {
    kv: (await runtime.mf.getKVNamespace('REGISTRY_KV')) as unknown as KvStore,
    r2: (await runtime.mf.getR2Bucket('REGISTRY_R2')) as unknown as BlobStore,
  };
}

/** One provider with one version × 12 platforms, published in full. */
export async function seedSmall(runtime: Runtime, address: ProviderAddress, version: string): Promise<void> {
  const { kv, r2 } = await stores(runtime);
  const release = fakeRelease(address, version, PLATFORMS);
  await publishVersion({ kv, blobs: r2 }, release.record, release.files);
}

/**
 * One provider with `count` versions × 12 platforms. The first count − 1
 * versions are stored as committed version records only (the source of truth
 * the lists are built from; their files and per-version documents are never
 * requested here), then the newest is published in full: finding no index,
 * it builds one from all `count` records (the repair path) and writes the
 * lists from it.
 */
export async function seedLarge(runtime: Runtime, address: ProviderAddress, count: number): Promise<string> {
  const { kv, r2 } = await stores(runtime);
  const versions = Array.from({ length: count }, (_, i) => `${Math.floor(i / 100) + 1}.${i % 100}.0`);
  const newest = versions.pop()!;
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < versions.length) {
        const version = versions[next++]!;
        const { record } = fakeRelease(address, version, PLATFORMS, { archiveSize: 64 });
        await commitRecord(r2, committedRecordKey(address, version), record);
      }
    }),
  );
  const release = fakeRelease(address, newest, PLATFORMS, { archiveSize: 64 });
  await publishVersion({ kv, blobs: r2 }, release.record, release.files);
  return newest;
}

/** A version with one `size`-byte archive (random bytes) for linux_amd64; returns its path-absolute URL. */
export async function seedLargeArchive(runtime: Runtime, address: ProviderAddress, version: string, size: number): Promise<string> {
  const { kv, r2 } = await stores(runtime);
  const bytes = randomFillSync(new Uint8Array(size));
  const shasum = createHash('sha256').update(bytes).digest('hex');
  const filename = archiveFilename(address.type, version, { os: 'linux', arch: 'amd64' });
  const sums = new TextEncoder().encode(`${shasum}  ${filename}\n`);
  const record: VersionRecord = {
    address,
    version,
    protocols: ['5.0'],
    packages: [
      { os: 'linux', arch: 'amd64', filename, shasum, h1: h1Hash([{ name: `terraform-provider-${address.type}_v${version}`, sha256Hex: shasum }]), size },
    ],
    shasumsFilename: shasumsFilename(address.type, version),
    shasumsSignatureFilename: shasumsSignatureFilename(address.type, version),
    signingKey: { key_id: '0123456789ABCDEF', ascii_armor: 'bench' },
    publishedAt: new Date().toISOString(),
  };
  const file = (name: string, content: Uint8Array) => ({
    filename: name,
    size: content.byteLength,
    contentType: 'application/octet-stream',
    sha256Hex: createHash('sha256').update(content).digest('hex'),
    open: () => content,
  });
  await publishVersion({ kv, blobs: r2 }, record, [
    file(filename, bytes),
    file(record.shasumsFilename, sums),
    file(record.shasumsSignatureFilename, new Uint8Array([1])),
  ]);
  return archivePath(address, version);
}

/** URL path of the linux_amd64 archive seedLargeArchive stores. */
export function archivePath(address: ProviderAddress, version: string): string {
  return releaseFilePath(address, version, archiveFilename(address.type, version, { os: 'linux', arch: 'amd64' }));
}
