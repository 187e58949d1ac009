import type { ProviderAddress } from '../../protocol/address';
import { sortVersions } from '../../protocol/version';
import { providerIndexKey } from '../layout';
import type { BlobStore } from '../store';
import type { PackageRecord, SigningKey, VersionRecord } from '../types';

/**
 * A provider's index: one R2 object (`.index/HOST/NS/TYPE.json`, see
 * src/store/layout.ts) holding what every list of the provider is built from
 * — the registry's and the mirror's version lists, the page data and the
 * catalogue entry — so a publish reads and writes one object for them, however
 * many versions exist, instead of every version record.
 *
 * The version records stay the source of truth and the commit point: the
 * index only ever gains versions whose record is committed, is changed only
 * with a conditional write (`If-Match` its etag, `If-None-Match: *` when new;
 * strongly consistent, so two writers never lose each other's version), and a
 * missing or damaged index is rebuilt from the records (src/store/providers/lists.ts).
 */

/** What the lists need of one version (its record without the signing key's armor, kept once in `keys`). */
export interface IndexedVersion {
  version: string;
  publishedAt: string;
  protocols: string[];
  packages: PackageRecord[];
  shasumsFilename: string;
  shasumsSignatureFilename: string;
  keyId: string;
}

export interface ProviderIndex {
  format: 1;
  address: ProviderAddress;
  /** Ascending (semver). */
  versions: IndexedVersion[];
  /** Every key that signed a listed version, once each. */
  keys: SigningKey[];
  /** The versions that have docs → the provider description in those docs ('' when none). */
  docs: Record<string, string>;
}

/** The index as read: null when there is none (or it is damaged: `damaged` says why); `etag` for the conditional write back. */
export interface LoadedIndex {
  index: ProviderIndex | null;
  etag: string | null;
  damaged?: string;
}

/** Reads the provider's index (one R2 get). Never throws for a damaged one: it is reported in `damaged` and rebuilt by the caller. */
export async function readProviderIndex(blobs: BlobStore, address: ProviderAddress): Promise<LoadedIndex> {
  const object = await blobs.get(providerIndexKey(address));
  if (!object) return { index: null, etag: null };
  const text = await object.text();
  const why = damage(text);
  return why ? { index: null, etag: object.etag, damaged: why } : { index: JSON.parse(text) as ProviderIndex, etag: object.etag };
}

/** Why `text` is not a usable index, or null when it is. */
function damage(text: string): string | null {
  let value: Partial<ProviderIndex>;
  try {
    value = JSON.parse(text) as Partial<ProviderIndex>;
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null || value.format !== 1) return 'not an index of format 1';
  if (!Array.isArray(value.versions) || !Array.isArray(value.keys) || typeof value.docs !== 'object' || value.docs === null) return 'incomplete';
  for (const v of value.versions) {
    if (typeof v?.version !== 'string' || !Array.isArray(v.packages) || !Array.isArray(v.protocols) || typeof v.keyId !== 'string')
      return 'a version entry is incomplete';
  }
  return null;
}

/**
 * Writes `index` only if the stored one is still the one read (`etag`; null:
 * only if there is none). Resolves false when another writer changed it
 * meanwhile (nothing written): read again and re-apply.
 */
export async function writeProviderIndex(blobs: BlobStore, index: ProviderIndex, etag: string | null): Promise<{ etag: string } | null> {
  return blobs.put(providerIndexKey(index.address), JSON.stringify(index), {
    httpMetadata: { contentType: 'application/json' },
    onlyIf: etag === null ? { etagDoesNotMatch: '*' } : { etagMatches: etag },
  });
}

/** An empty index of `address`. */
export function emptyIndex(address: ProviderAddress): ProviderIndex {
  return { format: 1, address, versions: [], keys: [], docs: {} };
}

/**
 * `index` with `records` added (a version already indexed is replaced by its
 * record: a mirrored version may gain platforms) and `docs` (version →
 * description) marked. Pure; `index` is not changed.
 */
export function indexWith(index: ProviderIndex, records: readonly VersionRecord[], docs: Readonly<Record<string, string>> = {}): ProviderIndex {
  const versions = new Map(index.versions.map((v) => [v.version, v]));
  const keys = new Map(index.keys.map((k) => [k.key_id, k]));
  for (const r of records) {
    versions.set(r.version, {
      version: r.version,
      publishedAt: r.publishedAt,
      protocols: r.protocols,
      packages: r.packages.map(({ os, arch, filename, shasum, h1, size }) => ({ os, arch, filename, shasum, h1, size })),
      shasumsFilename: r.shasumsFilename,
      shasumsSignatureFilename: r.shasumsSignatureFilename,
      keyId: r.signingKey.key_id,
    });
    if (!keys.has(r.signingKey.key_id)) keys.set(r.signingKey.key_id, r.signingKey);
  }
  const ordered = sortVersions([...versions.keys()]).map((v) => versions.get(v)!);
  const used = new Set(ordered.map((v) => v.keyId));
  return {
    format: 1,
    address: index.address,
    versions: ordered,
    keys: [...keys.values()].filter((k) => used.has(k.key_id)),
    docs: { ...index.docs, ...docs },
  };
}

/** True when the index lists `record`'s version exactly as `record` has it. */
export function indexHas(index: ProviderIndex, record: VersionRecord): boolean {
  const entry = index.versions.find((v) => v.version === record.version);
  return entry !== undefined && JSON.stringify(indexWith(index, [record]).versions) === JSON.stringify(index.versions);
}

/** The versions of the index as records (what the list documents are built from). */
export function indexedRecords(index: ProviderIndex): VersionRecord[] {
  const keys = new Map(index.keys.map((k) => [k.key_id, k]));
  return index.versions.map(({ keyId, ...v }) => ({
    ...v,
    address: index.address,
    signingKey: keys.get(keyId) ?? { key_id: keyId, ascii_armor: '' },
  }));
}

/** The provider's description: the one in the docs of its newest version with docs ('' when none). */
export function indexDescription(index: ProviderIndex): string {
  const newest = sortVersions(Object.keys(index.docs).filter((v) => index.versions.some((x) => x.version === v))).pop();
  return newest === undefined ? '' : (index.docs[newest] ?? '');
}
