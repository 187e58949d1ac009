import { parsePublisherList, type TrustedPublisher } from './record';
import { legacyPublishersKey, publishersObject } from '../layout';
import type { Store } from '../store';

/**
 * A namespace's trusted publishers, stored in R2 (.publishers/HOST/NS.json, a
 * JSON list): strongly consistent, and changed only by conditional writes
 * (./write.ts), so a removal is seen by the next publish at every location
 * and no write based on an older read can bring a removed publisher back.
 * Namespaces whose list was written before it moved to R2 still have it in
 * KV (publishers/HOST/NS): read from there until the next change moves it.
 */

export interface StoredPublishers {
  publishers: TrustedPublisher[];
  /** The R2 object's etag; null when no list is in R2 (none stored, or still in KV). */
  etag: string | null;
  /** The list was read from KV (stored before R2); the next change moves it and deletes the KV key. */
  fromKv: boolean;
}

/** The namespace's publishers with the etag a conditional change needs (damaged entries skipped; none stored → []). Cost: 1 R2 read, +1 KV read when R2 has none. */
export async function readStoredPublishers(store: Store, hostname: string, namespace: string): Promise<StoredPublishers> {
  const object = await store.blobs.get(publishersObject(hostname, namespace));
  if (object !== null) return { publishers: parsePublisherList(await object.text()), etag: object.etag, fromKv: false };
  const legacy = await store.kv.get(legacyPublishersKey(hostname, namespace), 'text');
  return { publishers: parsePublisherList(legacy), etag: null, fromKv: legacy !== null };
}

/** The namespace's publishers (see readStoredPublishers). */
export async function readPublishers(store: Store, hostname: string, namespace: string): Promise<TrustedPublisher[]> {
  return (await readStoredPublishers(store, hostname, namespace)).publishers;
}
