import { putHotKey } from '../kv-write';
import { mapLimit } from '../../concurrency';
import { catalogKey, catalogObjectKey, parseProviderIndexKey, providerIndexPrefix, providerLifecycleKey, summaryPrefix } from '../layout';
import { listAllKeys, listAllObjectKeys } from '../list';
import { providerPageData } from './write';
import { newestVersion } from '../../protocol/version';
import type { Catalog, CatalogEntry, ProviderPageData } from './read';
import { readLifecycle } from '../lifecycle/change';
import type { PublishProgress } from '../records';
import type { BlobStore, KvStore } from '../store';
import type { ProviderAddress } from '../../protocol/address';
import { indexDescription, indexedRecords, readProviderIndex } from '../providers/version-index';
import { ListRebuildRaceError } from '../errors';

/**
 * The provider catalogue (the home page's list), write side: one R2 object
 * (`.catalog/providers.json`) holding every provider's entry, changed only by
 * conditional writes so two publishes of different providers (each holding
 * only its own provider's lease) never drop each other's entry; the KV
 * document `pages/catalog` the Worker serves is written from it. A publish
 * reads and writes it once, however many providers and versions exist; a
 * missing or damaged one is rebuilt from the provider indexes (and, for
 * states from before indexes, the KV entries `pages/summaries/…`).
 */

type Store = { kv: KvStore; blobs: BlobStore };

const ATTEMPTS = 10;

/** A provider's catalogue entry, from its page data (which lists at least one version). */
export function catalogEntryOf(page: ProviderPageData): CatalogEntry {
  // A withdrawn version is never "latest" (unless every version is withdrawn: the entry still names one).
  const latest = newestVersion(page.versions.filter((v) => !v.withdrawn).map((v) => v.version)) ?? newestVersion(page.versions.map((v) => v.version))!;
  return {
    ...page.address,
    latest,
    description: page.description,
    versionCount: page.versions.length,
    publishedAt: page.versions.find((v) => v.version === latest)!.publishedAt,
  };
}

const addressOf = (e: CatalogEntry) => `${e.hostname}/${e.namespace}/${e.type}`;

/**
 * Puts `entry` into the catalogue (replacing the provider's previous entry)
 * and writes the KV copy. With `verify`, also rewrites the KV copy when it
 * differs although the entry was already there. Throws ListRebuildRaceError
 * after ATTEMPTS lost conditional writes in a row.
 */
export async function updateCatalogEntry(
  store: Store,
  entry: CatalogEntry,
  options: { progress: PublishProgress; check: () => void; verify: boolean },
): Promise<void> {
  await changeCatalog(store, (providers) => [...providers.filter((e) => addressOf(e) !== addressOf(entry)), entry], options);
}

/** Takes the provider at `address` out of the catalogue (its last version was removed); same guarantees as updateCatalogEntry. */
export async function removeCatalogEntry(store: Store, address: ProviderAddress, options: { progress: PublishProgress; check: () => void }): Promise<void> {
  const gone = `${address.hostname}/${address.namespace}/${address.type}`;
  await changeCatalog(store, (providers) => providers.filter((e) => addressOf(e) !== gone), { ...options, verify: true });
}

async function changeCatalog(
  store: Store,
  change: (providers: CatalogEntry[]) => CatalogEntry[],
  options: { progress: PublishProgress; check: () => void; verify: boolean },
): Promise<void> {
  let verify = options.verify;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const object = await store.blobs.get(catalogObjectKey);
    const stored = object ? await object.text() : null;
    let catalog = stored === null ? null : parseCatalog(stored);
    if (!catalog) {
      if (stored !== null) options.progress({ step: 'warning', detail: `${catalogObjectKey} is damaged; rebuilding it from the provider indexes` });
      catalog = await catalogFromIndexes(store);
      verify = true;
    }
    const providers = change(catalog.providers);
    providers.sort((a, b) => addressOf(a).localeCompare(addressOf(b)));
    const text = JSON.stringify({ providers } satisfies Catalog);
    let etag = object?.etag ?? null;
    if (text !== stored) {
      options.check();
      const written = await store.blobs.put(catalogObjectKey, text, {
        httpMetadata: { contentType: 'application/json' },
        onlyIf: etag === null ? { etagDoesNotMatch: '*' } : { etagMatches: etag },
      });
      if (!written) continue; // another publish changed it since it was read
      etag = written.etag;
      options.check();
      await putHotKey(store.kv, catalogKey, text, { superseded: superseded(store, etag) });
    } else if (verify) {
      if ((await store.kv.get(catalogKey, 'text')) === text) return;
      options.progress({ step: 'repair', detail: `${catalogKey}: differs from ${catalogObjectKey}; writing it again` });
      options.check();
      await putHotKey(store.kv, catalogKey, text, { superseded: superseded(store, etag) });
    } else {
      return;
    }
    // Publishes of other providers write the KV copy too: the last one written must be the newest.
    const now = await store.blobs.head(catalogObjectKey);
    if (now?.etag === etag) return;
    verify = true;
  }
  throw new ListRebuildRaceError('the provider catalogue kept changing while being rebuilt; run the publish again');
}

/** True once the catalogue object is no longer the one with `etag`: its newer writer writes the KV copy. */
const superseded = (store: Store, etag: string | null) => async () => (await store.blobs.head(catalogObjectKey))?.etag !== etag;

function parseCatalog(text: string): Catalog | null {
  try {
    const value = JSON.parse(text) as Catalog;
    return Array.isArray(value?.providers) ? value : null;
  } catch {
    return null;
  }
}

/** Every provider's entry from its index; entries of providers without an index from the KV summaries of older states. */
async function catalogFromIndexes(store: Store): Promise<Catalog> {
  const entries = new Map<string, CatalogEntry>();
  const indexKeys = (await listAllObjectKeys(store.blobs, providerIndexPrefix)).map(parseProviderIndexKey).filter((a) => a !== null);
  await mapLimit(indexKeys, 16, async (address) => {
    const { index } = await readProviderIndex(store.blobs, address);
    if (index && index.versions.length > 0) {
      const lifecycle = await readLifecycle(store.blobs, providerLifecycleKey(address));
      const entry = catalogEntryOf(providerPageData(indexedRecords(index), new Set(Object.keys(index.docs)), indexDescription(index), lifecycle));
      entries.set(addressOf(entry), entry);
    }
  });
  const summaries = await listAllKeys(store.kv, summaryPrefix);
  await mapLimit(summaries, 16, async (key) => {
    if (entries.has(key.slice(summaryPrefix.length))) return;
    const text = await store.kv.get(key, 'text');
    if (text === null) return;
    try {
      const entry = JSON.parse(text) as CatalogEntry;
      if (!entries.has(addressOf(entry))) entries.set(addressOf(entry), entry);
    } catch {
      // a damaged legacy entry: that provider reappears with its next publish
    }
  });
  return { providers: [...entries.values()] };
}
