import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { sha256Hex } from '../../protocol/hashes';
import { shasumsFilename, shasumsSignatureFilename } from '../../protocol/release-files';
import { providerLeaseName, pullManifestKey, releaseObjectKey } from '../layout';
import { acquireLease, type LeaseOptions } from '../lease';
import { storeMirroredVersion } from './write';
import { type ReleaseFile } from '../providers/write';
import { readVersionRecord } from '../providers/version-records';
import { updateProviderLists } from '../providers/lists';
import type { BlobStore, KvStore, Store } from '../store';
import { listedVersion, versionsDocumentRoom } from '../value-limits';
import type { PackageRecord, SigningKey, VersionRecord } from '../types';

/**
 * The write side of pull-through (the Worker storing what it fetched on a
 * first request), with the guarantees of `mirror sync`: the archive is stored
 * under its final key only once its bytes verified (the put's stream errors
 * otherwise, so R2 keeps nothing), and the version record — the commit point
 * that lists it — is written through storeMirroredVersion under the provider's
 * lease (the lease publish-provider and mirror sync take), then the lists.
 */

/** What was verified about one upstream version (src/mirror/manifest.ts builds it). */
export interface PullManifest {
  address: ProviderAddress;
  version: string;
  protocols: string[];
  /** The key of signing_keys that verified SHA256SUMS. */
  signer: SigningKey;
  shasumsUrl: string;
  /** The upstream SHA256SUMS (text) and its signature (base64), stored beside the archives. */
  sums: string;
  signature: string;
  /** Every allowed platform the upstream offers, with its verified SUMS line. */
  packages: { os: string; arch: string; filename: string; upstreamFilename: string; shasum: string; downloadUrl: string; documentUrl: string }[];
  verifiedAt: string;
}

/** Stores a verified manifest (R2 `.pull/…`), so archive requests need not ask the upstream again. */
export async function writeManifest(blobs: BlobStore, manifest: PullManifest): Promise<void> {
  await blobs.put(pullManifestKey(manifest.address, manifest.version), JSON.stringify(manifest), { httpMetadata: { contentType: 'application/json' } });
}

/** The stored manifest, or null (absent or unreadable: it is rebuilt from the upstream). */
export async function readManifest(blobs: BlobStore, address: ProviderAddress, version: string): Promise<PullManifest | null> {
  const object = await blobs.get(pullManifestKey(address, version));
  if (!object) return null;
  try {
    const manifest = JSON.parse(await object.text()) as PullManifest;
    return Array.isArray(manifest.packages) && typeof manifest.sums === 'string' ? manifest : null;
  } catch {
    return null;
  }
}

/**
 * Puts a pulled archive's verified stream under its final key with its
 * SHA-256 in the metadata (what uploadUnlessStored compares). Rejects — and
 * R2 stores nothing — when `body` errors (verification failed, upstream cut off).
 */
export async function storePulledArchive(
  blobs: BlobStore,
  address: ProviderAddress,
  version: string,
  filename: string,
  body: ReadableStream,
  shasum: string,
): Promise<void> {
  await blobs.put(releaseObjectKey(address, version, filename), body, {
    httpMetadata: { contentType: 'application/zip' },
    customMetadata: { sha256: shasum },
  });
}

/** The protocols a pulled version is stored with: the upstream's, or 5.0 when it lists none. */
function pulledProtocols(manifest: PullManifest): string[] {
  return manifest.protocols.length ? manifest.protocols : ['5.0'];
}

/**
 * Throws InputError (400) when committing the platform `pkg` of `manifest` — a new version's whole entry, or a
 * platform the stored version lacks — would take the provider's versions document past KV's value limit: the
 * one room check (versionsDocumentRoom's take), which storeMirroredVersion makes again under the provider lease.
 * Reads only (the version record and the versions document: 1 R2 and 1 KV read): pull-through calls it before it
 * takes the pull lease or asks the upstream, so a pull that could not be committed writes nothing.
 */
export async function checkPullRoom(store: Store, manifest: PullManifest, pkg: { os: string; arch: string }): Promise<void> {
  const existing = await readVersionRecord(store, manifest.address, manifest.version);
  await versionsDocumentRoom(store.kv, manifest.address).take(
    { version: manifest.version, protocols: pulledProtocols(manifest), platforms: [pkg] },
    existing && listedVersion(existing),
  );
}

/**
 * Commits a pulled package (its archive already stored and verified; `pkg`
 * carries its h1 and size): takes the provider lease (waiting up to
 * `maxWaitMs` for a sync or another commit), adds the version or the platform
 * with storeMirroredVersion, and adds it to the provider's index and lists. Throws what
 * storeMirroredVersion throws — VersionConflictError when the mirror already holds
 * other bytes for that platform (mirrored bytes never change) — and
 * LeaseBusyError when the lease stays held.
 */
export async function commitPulledPackage(
  kv: KvStore,
  blobs: BlobStore,
  manifest: PullManifest,
  pkg: PackageRecord,
  lease: Omit<LeaseOptions, 'ttlMs'>,
): Promise<void> {
  const { address, version } = manifest;
  const sumsBytes = new TextEncoder().encode(manifest.sums);
  const signatureBytes = Uint8Array.from(atob(manifest.signature), (c) => c.charCodeAt(0));
  const record: VersionRecord = {
    address,
    version,
    protocols: pulledProtocols(manifest),
    packages: [pkg],
    shasumsFilename: shasumsFilename(address.type, version),
    shasumsSignatureFilename: shasumsSignatureFilename(address.type, version),
    signingKey: manifest.signer,
    publishedAt: new Date().toISOString(),
  };
  const files: ReleaseFile[] = [
    {
      filename: pkg.filename,
      sha256Hex: pkg.shasum,
      size: pkg.size,
      contentType: 'application/zip',
      open: () => {
        throw new Error(`${formatAddress(address)} ${version}: the pulled archive ${pkg.filename} is no longer stored; request it again`);
      },
    },
    {
      filename: record.shasumsFilename,
      sha256Hex: sha256Hex(sumsBytes),
      size: sumsBytes.byteLength,
      contentType: 'text/plain; charset=utf-8',
      open: () => sumsBytes,
    },
    {
      filename: record.shasumsSignatureFilename,
      sha256Hex: sha256Hex(signatureBytes),
      size: signatureBytes.byteLength,
      contentType: 'application/pgp-signature',
      open: () => signatureBytes,
    },
  ];
  const held = await acquireLease(blobs, providerLeaseName(address), { ...lease, ttlMs: 30_000 });
  try {
    await storeMirroredVersion({ kv, blobs }, record, files, () => {}, held);
    held.check();
    // The provider's index gains the stored (possibly merged) record: a constant number of subrequests however many versions it holds.
    const stored = (await readVersionRecord({ kv, blobs }, address, version)) ?? record;
    await updateProviderLists({ kv, blobs }, address, { records: [stored] }, { check: () => held.check() });
  } finally {
    await held.release();
  }
}
