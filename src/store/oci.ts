import type { ProviderAddress } from '../protocol/address';
import type { ModuleAddress } from '../protocol/modules-v1';
import { sha256Hex } from '../protocol/hashes';
import { moduleManifest, providerIndex, providerTargetManifest, OCI_INDEX, OCI_MANIFEST, type PlatformManifest } from '../protocol/oci';
import { readTar } from '../protocol/tar';
import { writeZip, type ZipFileEntry } from '../protocol/zip-writer';
import { InputError } from '../protocol/errors';
import { moduleLifecycleKey, moduleObjectKey, ociBlobKey, ociManifestKey, ociModuleZipKey, ociTagKey, providerLifecycleKey, releaseObjectKey } from './layout';
import { readLifecycle } from './lifecycle/change';
import type { LifecycleState } from './lifecycle/state';
import type { VersionRecord } from './types';
import type { ModuleVersionRecord } from './modules/types';

/**
 * The OCI view's stored objects (layout.ts, "OCI view"): a version's
 * manifests are made from its committed record the first time the view is
 * asked for it, written once with create-only puts (If-None-Match: *) and
 * from then on served as the stored bytes — a racing writer's identical
 * bytes are refused and the stored ones win, so a digest, once served, never
 * names other bytes. A layer is the stored zip itself: the view keeps only a
 * pointer object (no bytes) from the digest to the zip's R2 key.
 */

/** A stored manifest or index: its bytes, sha256 digest and media type. */
export interface StoredManifest {
  bytes: Uint8Array;
  digest: string;
  mediaType: string;
}

/** The version's tagged manifest (one R2 get), or null when the view has not written it yet. */
export function readTaggedManifest(blobs: R2Bucket, repo: string, version: string): Promise<StoredManifest | null> {
  return readManifestObject(blobs, ociTagKey(repo, version));
}

/** A manifest or index by the hex of its digest (one R2 get), or null when none of this repository has it. */
export function readManifestByDigest(blobs: R2Bucket, repo: string, hex: string): Promise<StoredManifest | null> {
  return readManifestObject(blobs, ociManifestKey(repo, hex));
}

async function readManifestObject(blobs: R2Bucket, key: string): Promise<StoredManifest | null> {
  const object = await blobs.get(key);
  if (!object) return null;
  const bytes = new Uint8Array(await object.arrayBuffer());
  const digest = object.customMetadata?.digest ?? `sha256:${sha256Hex(bytes)}`;
  return { bytes, digest, mediaType: object.httpMetadata?.contentType ?? OCI_MANIFEST };
}

/** The R2 key of the layer `hex` of this repository (one R2 head of its pointer), or null when it names no layer here. */
export async function readLayerKey(blobs: R2Bucket, repo: string, hex: string): Promise<string | null> {
  const pointer = await blobs.head(ociBlobKey(repo, hex));
  return pointer?.customMetadata?.key ?? null;
}

/** The deprecation message of `version` in `state` (the version's own, else the whole package's), or undefined. */
export function deprecationOf(state: LifecycleState, version: string): string | undefined {
  return state.versions[version]?.deprecated?.message ?? state.deprecated?.message;
}

/**
 * Writes a provider version's view from its committed record — one manifest
 * per platform (the stored zip as its one layer), the image index, a layer
 * pointer per zip, the tag last — and returns the stored index. Reads the
 * provider's lifecycle once for the deprecation annotation. R2: 1 get (the
 * lifecycle), 2 puts per platform and 2 more, 1 get when another writer
 * was first. Throws what R2 throws.
 */
export async function writeProviderView(bucket: R2Bucket, repo: string, address: ProviderAddress, record: VersionRecord): Promise<StoredManifest> {
  const blobs = bucket;
  const lifecycle = await readLifecycle(blobs, providerLifecycleKey(address));
  const platforms: PlatformManifest[] = [];
  await Promise.all(
    record.packages.map(async (pkg) => {
      const manifest = providerTargetManifest({ sha256: pkg.shasum, size: pkg.size, filename: pkg.filename });
      const digest = await putManifest(blobs, repo, manifest, OCI_MANIFEST);
      await putLayerPointer(blobs, repo, pkg.shasum, releaseObjectKey(address, record.version, pkg.filename));
      platforms.push({ os: pkg.os, arch: pkg.arch, digest, size: new TextEncoder().encode(manifest).length });
    }),
  );
  return putTagged(blobs, repo, record.version, providerIndex(record.version, platforms, deprecationOf(lifecycle, record.version)), OCI_INDEX);
}

/**
 * Writes a module version's view — its image manifest with one zip layer,
 * the layer pointer, the tag — and returns the stored manifest. A package
 * published as zip is the layer itself; one published as tar.gz is made into
 * the deterministic zip of src/protocol/zip-writer.ts once (moduleZip).
 * Throws InputError (502: a stored package that cannot be read) and what R2 throws.
 */
export async function writeModuleView(bucket: R2Bucket, repo: string, address: ModuleAddress, record: ModuleVersionRecord): Promise<StoredManifest> {
  const blobs = bucket;
  const lifecycle = await readLifecycle(blobs, moduleLifecycleKey(address));
  const packageKey = moduleObjectKey(address, record.version, record.filename);
  const zip =
    record.format === 'zip'
      ? { key: packageKey, sha256: record.sha256, size: record.size, filename: record.filename }
      : await moduleZip(blobs, repo, record, packageKey);
  await putLayerPointer(blobs, repo, zip.sha256, zip.key);
  const manifest = moduleManifest(record.version, { sha256: zip.sha256, size: zip.size, filename: zip.filename }, deprecationOf(lifecycle, record.version));
  await putManifest(blobs, repo, manifest, OCI_MANIFEST);
  return putTagged(blobs, repo, record.version, manifest, OCI_MANIFEST);
}

/**
 * The zip of a module version stored as tar.gz: read back when made before
 * (one R2 head), else made from the package (gunzip, the one tar parser,
 * the deterministic zip writer) and created once. Symlinks and hard links
 * are refused (module packages hold none; publish refuses them).
 */
async function moduleZip(
  blobs: R2Bucket,
  repo: string,
  record: ModuleVersionRecord,
  packageKey: string,
): Promise<{ key: string; sha256: string; size: number; filename: string }> {
  const key = ociModuleZipKey(repo, record.version);
  const filename = record.filename.replace(/\.tar\.gz$/, '.zip');
  const made = await blobs.head(key);
  if (made?.customMetadata?.sha256) return { key, sha256: made.customMetadata.sha256, size: made.size, filename };
  const stored = await blobs.get(packageKey);
  if (!stored) throw new InputError(`the package ${record.filename} is not stored`, 502);
  const gz = new Uint8Array(await stored.arrayBuffer());
  const tar = new Uint8Array(await new Response(new Blob([gz]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer());
  const files: ZipFileEntry[] = [];
  for (const entry of readTar(tar)) {
    const name = entry.name.replace(/^(\.\/)+/, '');
    if (entry.type === '5' || name === '' || name.endsWith('/')) continue;
    if (entry.type !== '0' && entry.type !== '\0' && entry.type !== '')
      throw new InputError(`the package ${record.filename} holds ${name}, not a plain file`, 502);
    files.push({ name, mode: entry.mode & 0o7777 ? 0o100000 | (entry.mode & 0o7777) : 0o100644, data: entry.data });
  }
  const zip = writeZip(files);
  const sha256 = sha256Hex(zip);
  const written = await blobs.put(key, zip, {
    httpMetadata: { contentType: 'application/zip' },
    customMetadata: { sha256 },
    onlyIf: { etagDoesNotMatch: '*' },
  });
  if (written) return { key, sha256, size: zip.length, filename };
  const other = await blobs.head(key);
  return { key, sha256: other?.customMetadata?.sha256 ?? sha256, size: other?.size ?? zip.length, filename };
}

/** Creates manifests/HEX once (identical bytes by construction when it exists); returns the digest. */
async function putManifest(blobs: R2Bucket, repo: string, text: string, mediaType: string): Promise<string> {
  const hex = sha256Hex(text);
  const digest = `sha256:${hex}`;
  await blobs.put(ociManifestKey(repo, hex), text, { httpMetadata: { contentType: mediaType }, customMetadata: { digest }, onlyIf: { etagDoesNotMatch: '*' } });
  return digest;
}

async function putLayerPointer(blobs: R2Bucket, repo: string, hex: string, key: string): Promise<void> {
  await blobs.put(ociBlobKey(repo, hex), '', { customMetadata: { key }, onlyIf: { etagDoesNotMatch: '*' } });
}

/**
 * Writes the manifest by digest, then the tag (the commit point); when the tag
 * was written first by another request, the stored bytes are returned.
 */
async function putTagged(blobs: R2Bucket, repo: string, version: string, text: string, mediaType: string): Promise<StoredManifest> {
  const digest = await putManifest(blobs, repo, text, mediaType);
  const written = await blobs.put(ociTagKey(repo, version), text, {
    httpMetadata: { contentType: mediaType },
    customMetadata: { digest },
    onlyIf: { etagDoesNotMatch: '*' },
  });
  if (written) return { bytes: new TextEncoder().encode(text), digest, mediaType };
  return (await readTaggedManifest(blobs, repo, version)) ?? { bytes: new TextEncoder().encode(text), digest, mediaType };
}
