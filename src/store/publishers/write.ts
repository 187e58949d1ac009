import type { TrustedPublisher } from './record';
import { legacyPublishersKey, publishersObject } from '../layout';
import type { Store } from '../store';
import { readStoredPublishers } from './read';

/** Attempts before a change that keeps meeting concurrent writes gives up. */
const ATTEMPTS = 5;

/**
 * Changes a namespace's trusted publishers: `change` gets the current list
 * (read from R2, strongly consistent) and returns the new one and a result;
 * the list is written only if nobody wrote it since it was read (R2 If-Match,
 * or If-None-Match: * when none is stored), else read and changed again. So
 * two operators, or a removal racing any other change, never undo each
 * other. A list still in KV (./read.ts) is moved to R2 by the write and its
 * KV key deleted. `change` may throw (InputError) to change nothing. Throws
 * Error after ATTEMPTS conflicting writes in a row. Returns `change`'s result.
 */
export async function updatePublishers<T>(
  store: Store,
  hostname: string,
  namespace: string,
  change: (current: readonly TrustedPublisher[]) => { publishers: readonly TrustedPublisher[]; result: T },
): Promise<T> {
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const stored = await readStoredPublishers(store, hostname, namespace);
    const { publishers, result } = change(stored.publishers);
    const written = await store.blobs.put(publishersObject(hostname, namespace), JSON.stringify(publishers), {
      httpMetadata: { contentType: 'application/json' },
      onlyIf: stored.etag === null ? { etagDoesNotMatch: '*' } : { etagMatches: stored.etag },
    });
    if (written === null) continue; // someone else wrote since our read: read again
    if (stored.fromKv) await store.kv.delete(legacyPublishersKey(hostname, namespace));
    return result;
  }
  throw new Error(`the trusted publishers of ${hostname}/${namespace} kept changing while being written (${ATTEMPTS} attempts); run the command again`);
}

/** Replaces the namespace's publishers with `publishers` (conditional as updatePublishers). */
export function writePublishers(store: Store, hostname: string, namespace: string, publishers: readonly TrustedPublisher[]): Promise<void> {
  return updatePublishers(store, hostname, namespace, () => ({ publishers, result: undefined }));
}
