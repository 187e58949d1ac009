import semver from 'semver';
import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { InputError } from '../../protocol/errors';
import { sortVersions } from '../../protocol/version';
import { fingerprintOf } from '../../protocol/openpgp-packets';
import type { ProviderDocs } from './provider-docs';
import { catalogKey, docsKey, docsPrefix, providerPageKey, summaryKey, summaryPrefix } from '../layout';
import type { Catalog, CatalogEntry, PageKey, ProviderPageData } from './read';
import type { KvStore } from '../store';
import type { SigningKey, VersionRecord } from '../types';
import { listAllKeys } from '../list';
import { EMPTY_LIFECYCLE, type LifecycleState } from '../lifecycle/state';

/**
 * The write side of the page documents (scripts only, never the Worker):
 * a version's docs, and after every change to a provider's versions its page
 * data, its catalogue entry and the catalogue. Like the version lists, each
 * is rebuilt from what is stored and written only when it differs; the
 * catalogue is rebuilt from every provider's entry and re-checked after
 * writing, so two concurrent publishes of different providers both end up
 * listed.
 */

/**
 * Stores a version's docs. Docs are immutable like the rest of a version:
 * the same docs again is a no-op ('unchanged'); different docs for a version
 * that has some throws InputError (409). A version published without docs
 * may get them later ('written'). With dryRun it only checks ('would write').
 */
export async function writeVersionDocs(
  kv: KvStore, address: ProviderAddress, version: string, docs: ProviderDocs, dryRun = false,
): Promise<'written' | 'unchanged' | 'would write'> {
  const text = JSON.stringify(docs);
  const existing = await kv.get(docsKey(address, version), 'text');
  if (existing === text) return 'unchanged';
  if (existing !== null) {
    throw new InputError(`${formatAddress(address)} ${version} already has different docs; docs are immutable like the version — publish a new version with the new docs`, 409);
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

/** The newest stable version, or the newest prerelease when none is stable; null for none. */
export function latestVersion(versions: readonly string[]): string | null {
  const sorted = sortVersions(versions).reverse();
  return sorted.find((v) => semver.prerelease(v) === null) ?? sorted[0] ?? null;
}

/** The page data of a provider from its version records and which versions have docs. */
export function providerPageData(
  records: readonly VersionRecord[], docsVersions: ReadonlySet<string>, description: string, lifecycle: LifecycleState = EMPTY_LIFECYCLE,
): ProviderPageData {
  const keys = new Map<string, SigningKey>();
  for (const record of records) keys.set(record.signingKey.key_id, record.signingKey);
  const byVersion = new Map(records.map((r) => [r.version, r]));
  return {
    address: records[0]!.address,
    description,
    versions: sortVersions([...byVersion.keys()]).reverse().map((version) => {
      const r = byVersion.get(version)!;
      return {
        version,
        publishedAt: r.publishedAt,
        protocols: r.protocols,
        keyId: r.signingKey.key_id,
        docs: docsVersions.has(version),
        platforms: [...r.packages]
          .sort((a, b) => `${a.os}_${a.arch}`.localeCompare(`${b.os}_${b.arch}`))
          .map(({ os, arch, filename, shasum, h1, size }) => ({ os, arch, filename, shasum, h1, size })),
        ...lifecycle.versions[version],
      };
    }),
    ...(lifecycle.deprecated ? { deprecated: lifecycle.deprecated } : {}),
    keys: [...keys.values()].map((k): PageKey => ({ ...k, fingerprint: fingerprintOf(k) })),
  };
}

/**
 * Rewrites a provider's page data and catalogue entry from its records, then
 * the catalogue. Called after its version lists are rebuilt (any hostname:
 * our providers and mirrored ones).
 */
export async function rebuildProviderPages(
  kv: KvStore, address: ProviderAddress, records: readonly VersionRecord[], lifecycle: LifecycleState = EMPTY_LIFECYCLE,
): Promise<void> {
  if (records.length === 0) return;
  const docsVersions = new Set((await listAllKeys(kv, docsPrefix(address))).map((key) => key.slice(docsPrefix(address).length)));
  const newestWithDocs = sortVersions(records.map((r) => r.version).filter((v) => docsVersions.has(v))).pop();
  const docs = newestWithDocs ? await readVersionDocs(kv, address, newestWithDocs) : null;
  const description = docs?.providerSchema.description ?? '';
  const page = providerPageData(records, docsVersions, description, lifecycle);
  await putIfChanged(kv, providerPageKey(address), JSON.stringify(page));
  // A withdrawn version is never "latest" (unless every version is withdrawn: the entry still names one).
  const latest = latestVersion(page.versions.filter((v) => !v.withdrawn).map((v) => v.version)) ?? latestVersion(page.versions.map((v) => v.version))!;
  const entry: CatalogEntry = {
    ...address,
    latest,
    description,
    versionCount: page.versions.length,
    publishedAt: page.versions.find((v) => v.version === latest)!.publishedAt,
  };
  await putIfChanged(kv, summaryKey(address), JSON.stringify(entry));
  await rebuildCatalog(kv);
}

/** Rebuilds pages/catalog from every provider's entry until what it wrote matches what is stored. */
export async function rebuildCatalog(kv: KvStore): Promise<void> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const names = await listAllKeys(kv, summaryPrefix);
    const entries: CatalogEntry[] = [];
    for (const name of names) {
      const text = await kv.get(name, 'text');
      if (text !== null) entries.push(JSON.parse(text) as CatalogEntry);
    }
    entries.sort((a, b) => `${a.hostname}/${a.namespace}/${a.type}`.localeCompare(`${b.hostname}/${b.namespace}/${b.type}`));
    const catalog: Catalog = { providers: entries };
    const text = JSON.stringify(catalog);
    if ((await kv.get(catalogKey, 'text')) === text) return;
    await kv.put(catalogKey, text);
  }
  throw new Error('the provider catalogue kept changing while being rebuilt; run the publish again');
}

async function putIfChanged(kv: KvStore, key: string, text: string): Promise<void> {
  if ((await kv.get(key, 'text')) !== text) await kv.put(key, text);
}
