import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Miniflare } from 'miniflare';
import { h1Hash } from '../../src/protocol/hashes';
import { publishVersion, type ReleaseFile } from '../../src/store/providers/write';
import { writeSigningKeys } from '../../src/store/providers/signing-keys';
import type { KvStore, BlobStore } from '../../src/store/store';
import type { PackageRecord, VersionRecord } from '../../src/store/types';
import { zipDigests, type GeneratedRelease, type SigningKeyPair } from './release';

/**
 * Publishes generated releases into the local state `wrangler dev
 * --persist-to STATE` serves (STATE/v3, the KV namespace id and R2 bucket
 * from wrangler.toml), through the store's write path directly (the
 * install tests publish with the CLI instead).
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
      await publishVersion({ kv, blobs: r2 }, record, files);
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

/** Kept here too for the tests that imported it from this module. */
export { zipDigests };
