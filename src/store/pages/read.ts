import { DocumentCache, type Freshness } from '../document-cache';
import type { ProviderAddress } from '../../protocol/address';
import type { ProviderDocs } from '../../protocol/provider-docs-shape';
import { catalogKey, docsKey, providerPageKey } from '../layout';
import type { LifecycleMark } from '../lifecycle/state';
import type { PackageRecord, VersionRecord } from '../types';

/**
 * Page documents: what a page for people needs, materialised at publish time
 * (src/store/pages/write.ts) so a page costs at most one KV read on a
 * cache miss. The read side, used by the Worker, parses each once per
 * isolate: the catalogue and provider pages for INDEX_CACHE_SECONDS (they
 * change with every publish), a version's docs until evicted (immutable).
 */

/** A public signing key as a page shows it. */
export interface PageKey {
  key_id: string;
  /** Upper-case hex fingerprint; '' when the armored key could not be parsed. */
  fingerprint: string;
  ascii_armor: string;
}

/** A platform's package as a page shows it: the version record's own fields. */
export type PagePlatform = PackageRecord;

/** A version's packages as a page shows them, sorted by platform. */
export function pagePlatforms(record: VersionRecord): PagePlatform[] {
  return [...record.packages]
    .sort((a, b) => `${a.os}_${a.arch}`.localeCompare(`${b.os}_${b.arch}`))
    .map(({ os, arch, filename, shasum, h1, size }) => ({ os, arch, filename, shasum, h1, size }));
}

export interface PageVersion {
  version: string;
  publishedAt: string;
  protocols: string[];
  keyId: string;
  /** True when docs are stored for this version. */
  docs: boolean;
  /**
   * The version's packages, kept for the newest PAGE_FULL_VERSIONS versions only (so the page data stays
   * far under KV's 25 MiB value limit at any realistic number of versions); absent for older ones, whose
   * page reads them from the version's R2 record (src/pages/providers.ts).
   */
  platforms?: PagePlatform[];
  /** Lifecycle marks (src/store/lifecycle/): shown on the pages; a withdrawn version is never the default. */
  deprecated?: LifecycleMark;
  withdrawn?: LifecycleMark;
}

/** How many of a provider's newest versions the page data keeps with their packages. */
export const PAGE_FULL_VERSIONS = 50;

/** Everything the provider and version pages show: versions newest first (packages for the newest PAGE_FULL_VERSIONS), keys by id. */
export interface ProviderPageData {
  address: ProviderAddress;
  description: string;
  versions: PageVersion[];
  keys: PageKey[];
  /** The whole provider is deprecated (src/store/lifecycle/). */
  deprecated?: LifecycleMark;
}

/** One provider on the home page. */
export interface CatalogEntry {
  hostname: string;
  namespace: string;
  type: string;
  /** Newest stable version (newest prerelease when there is no stable one). */
  latest: string;
  description: string;
  versionCount: number;
  publishedAt: string;
}

export interface Catalog {
  providers: CatalogEntry[];
}

class Parsed<T> {
  constructor(
    readonly value: T,
    readonly cacheBytes: number,
  ) {}
}

const parsed = new DocumentCache<Parsed<unknown>>(16 * 1024 * 1024);

async function readParsed<T>(kv: KVNamespace, key: string, ttlMs: number, freshness?: Freshness): Promise<T | null> {
  const cached = parsed.get(key, Date.now(), freshness);
  if (cached !== undefined) return cached === null ? null : (cached.value as T);
  const text = await kv.get(key, 'text');
  const value = text === null ? null : new Parsed<unknown>(JSON.parse(text), text.length * 3);
  parsed.set(key, value, ttlMs, Date.now(), freshness);
  return value === null ? null : (value.value as T);
}

// Each reader takes an optional Freshness, lowered to the expiry of what it
// returned, so a page rendered from it is cached no longer than its data.

/** The home page's catalogue (empty when nothing is published yet). One KV read on a miss. */
export async function readCatalog(kv: KVNamespace, listTtlMs: number, freshness?: Freshness): Promise<Catalog> {
  return (await readParsed<Catalog>(kv, catalogKey, listTtlMs, freshness)) ?? { providers: [] };
}

/** A provider's page data, null when it has no published version. One KV read on a miss. */
export function readProviderPage(kv: KVNamespace, address: ProviderAddress, listTtlMs: number, freshness?: Freshness): Promise<ProviderPageData | null> {
  return readParsed<ProviderPageData>(kv, providerPageKey(address), listTtlMs, freshness);
}

/** A version's docs, null when none were published. Immutable once written; absence is rechecked after listTtlMs. */
export async function readDocs(
  kv: KVNamespace,
  address: ProviderAddress,
  version: string,
  listTtlMs: number,
  freshness?: Freshness,
): Promise<ProviderDocs | null> {
  const key = docsKey(address, version);
  const cached = parsed.get(key, Date.now(), freshness);
  if (cached !== undefined) return cached === null ? null : (cached.value as ProviderDocs);
  const text = await kv.get(key, 'text');
  const value = text === null ? null : new Parsed<unknown>(JSON.parse(text), text.length * 3);
  parsed.set(key, value, value === null ? listTtlMs : Number.POSITIVE_INFINITY, Date.now(), freshness);
  return value === null ? null : (value.value as ProviderDocs);
}
