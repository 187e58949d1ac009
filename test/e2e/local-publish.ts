import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Miniflare } from 'miniflare';
import yauzl from 'yauzl';
import { h1Hash, type ZipEntryDigest } from '../../src/protocol/hashes';
import { publishVersion, writeSigningKeys, type ReleaseFile } from '../../src/store/publish';
import type { KvStore, BlobStore, PackageRecord, VersionRecord } from '../../src/store/types';
import type { GeneratedRelease, SigningKeyPair } from './release';

/**
 * Publishes generated releases into the local state `wrangler dev
 * --persist-to STATE` serves (STATE/v3, the KV namespace id and R2 bucket
 * from wrangler.toml), through the store's write path. Stand-in for the
 * publish CLI while it is being written; the store code is the same.
 */
export async function publishIntoState(
  stateDir: string,
  hostname: string,
  namespace: string,
  releases: readonly GeneratedRelease[],
  key: SigningKeyPair,
): Promise<void> {
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null, { status: 404 }) } }',
    defaultPersistRoot: join(stateDir, 'v3'),
    kvPersist: true,
    r2Persist: true,
    kvNamespaces: { REGISTRY_KV: 'edge-registry-local' },
    r2Buckets: { REGISTRY_R2: 'edge-registry' },
  });
  try {
    const kv = (await mf.getKVNamespace('REGISTRY_KV')) as unknown as KvStore;
    const r2 = (await mf.getR2Bucket('REGISTRY_R2')) as unknown as BlobStore;
    const signingKey = { key_id: key.keyId, ascii_armor: key.publicArmored };
    await writeSigningKeys(kv, hostname, namespace, [signingKey]);
    for (const release of releases) {
      const address = { hostname, namespace, type: release.type };
      const packages: PackageRecord[] = [];
      const files: ReleaseFile[] = [];
      for (const [platform, path] of release.archives) {
        const [os, arch] = platform.split('_') as [string, string];
        const bytes = await readFile(path);
        const shasum = sha256(bytes);
        packages.push({ os, arch, filename: basename(path), shasum, h1: h1Hash(await zipDigests(bytes)), size: bytes.byteLength });
        files.push(fileOf(basename(path), bytes, 'application/zip'));
      }
      for (const path of [release.shasumsPath, release.signaturePath]) {
        files.push(fileOf(basename(path), await readFile(path), 'application/octet-stream'));
      }
      const record: VersionRecord = {
        address,
        version: release.version,
        protocols: ['5.0'],
        packages,
        shasumsFilename: basename(release.shasumsPath),
        shasumsSignatureFilename: basename(release.signaturePath),
        signingKey,
        publishedAt: new Date().toISOString(),
      };
      await publishVersion(kv, r2, record, files);
    }
  } finally {
    await mf.dispose();
  }
}

function fileOf(filename: string, bytes: Buffer, contentType: string): ReleaseFile {
  return { filename, sha256Hex: sha256(bytes), size: bytes.byteLength, contentType, open: () => new Uint8Array(bytes) };
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The name and SHA-256 of every file entry in a zip (directories skipped, as dirhash does). */
export function zipDigests(zip: Buffer): Promise<ZipEntryDigest[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true }, (error, archive) => {
      if (error || !archive) return reject(error ?? new Error('unreadable zip'));
      const digests: ZipEntryDigest[] = [];
      archive.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName.endsWith('/')) return archive.readEntry();
        archive.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError ?? new Error(`cannot read ${entry.fileName}`));
          const hash = createHash('sha256');
          stream.on('data', (chunk: Buffer) => hash.update(chunk));
          stream.on('end', () => {
            digests.push({ name: entry.fileName, sha256Hex: hash.digest('hex') });
            archive.readEntry();
          });
          stream.on('error', reject);
        });
      });
      archive.on('end', () => resolve(digests));
      archive.on('error', reject);
      archive.readEntry();
    });
  });
}
