import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { sortVersions } from '../../protocol/version';
import { fingerprintOf } from '../../protocol/openpgp-packets';
import type { ProviderDocs } from '../../protocol/provider-docs-shape';
import { docsKey } from '../layout';
import { PAGE_FULL_VERSIONS, pagePlatforms, type PageKey, type ProviderPageData } from './read';
import type { KvStore } from '../store';
import type { SigningKey, VersionRecord } from '../types';
import { EMPTY_LIFECYCLE, type LifecycleState } from '../lifecycle/state';
import { VersionConflictError } from '../errors';

/**
 * The write side of the page documents (publish-provider, and the Worker's
 * publish API in src/routes/publish/provider-docs.ts): a
 * version's docs, and the page data a provider's versions build (written by
 * src/store/providers/lists.ts from the provider's index; the catalogue by
 * src/store/pages/catalog.ts).
 */

/**
 * Stores a version's docs. Docs are immutable like the rest of a version:
 * the same docs again is a no-op ('unchanged'); different docs for a version
 * that has some throws VersionConflictError. A version published without docs
 * may get them later ('written'). With dryRun it only checks ('would write').
 */
export async function writeVersionDocs(
  kv: KvStore,
  address: ProviderAddress,
  version: string,
  docs: ProviderDocs,
  dryRun = false,
): Promise<'written' | 'unchanged' | 'would write'> {
  const text = JSON.stringify(docs);
  const existing = await kv.get(docsKey(address, version), 'text');
  if (existing === text) return 'unchanged';
  if (existing !== null) {
    throw new VersionConflictError(
      `${formatAddress(address)} ${version} already has different docs; docs are immutable like the version — publish a new version with the new docs`,
    );
  }
  if (dryRun) return 'would write';
  await kv.put(docsKey(address, version), text);
  return 'written';
}

/** The stored docs of a version, or null. */
export async function readVersionDocs(kv: KvStore, address: ProviderAddress, version: string): Promise<ProviderDocs | null> {
  const text = await kv.get(docsKey(address, version), 'text');
  return text === null ? null : (JSON.parse(text) as ProviderDocs);
}

/**
 * The page data of a provider from its version records and which versions have docs: every version with
 * its date, protocols, key, docs flag and lifecycle marks, and the packages of the newest
 * PAGE_FULL_VERSIONS (an older version's page reads its packages from its R2 record).
 */
export function providerPageData(
  records: readonly VersionRecord[],
  docsVersions: ReadonlySet<string>,
  description: string,
  lifecycle: LifecycleState = EMPTY_LIFECYCLE,
): ProviderPageData {
  const keys = new Map<string, SigningKey>();
  for (const record of records) keys.set(record.signingKey.key_id, record.signingKey);
  const byVersion = new Map(records.map((r) => [r.version, r]));
  return {
    address: records[0]!.address,
    description,
    versions: sortVersions([...byVersion.keys()])
      .reverse()
      .map((version, newest) => {
        const r = byVersion.get(version)!;
        return {
          version,
          publishedAt: r.publishedAt,
          protocols: r.protocols,
          keyId: r.signingKey.key_id,
          docs: docsVersions.has(version),
          ...(newest < PAGE_FULL_VERSIONS ? { platforms: pagePlatforms(r) } : {}),
          ...lifecycle.versions[version],
        };
      }),
    ...(lifecycle.deprecated ? { deprecated: lifecycle.deprecated } : {}),
    keys: [...keys.values()].map((k): PageKey => ({ ...k, fingerprint: fingerprintOf(k) })),
  };
}
