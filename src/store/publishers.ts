import { parsePublisherList, type TrustedPublisher } from '../identity/publishers';
import { publishersKey } from './layout';
import type { KvStore } from './store';

/**
 * A namespace's trusted publishers in KV (publishers/HOST/NS, a JSON list).
 * The publisher script writes it; the Worker reads it once per CI-token
 * publish. Like token records, a change reaches every Cloudflare location
 * within KV's propagation time (≤ 60 s).
 */

/** The namespace's publishers (damaged entries skipped; none stored → []). */
export async function readPublishers(kv: KvStore, hostname: string, namespace: string): Promise<TrustedPublisher[]> {
  return parsePublisherList(await kv.get(publishersKey(hostname, namespace), 'text'));
}

/** Replaces the namespace's list (deletes the key when it is empty). */
export async function writePublishers(kv: KvStore, hostname: string, namespace: string, publishers: readonly TrustedPublisher[]): Promise<void> {
  if (publishers.length === 0) await kv.delete(publishersKey(hostname, namespace));
  else await kv.put(publishersKey(hostname, namespace), JSON.stringify(publishers));
}
