import { parsePublisherList, type TrustedPublisher } from './record';
import { publishersKey } from '../layout';
import type { KvStore } from '../store';

/**
 * A namespace's trusted publishers in KV (publishers/HOST/NS, a JSON list).
 * The publisher script writes it (./write.ts); the Worker reads it once per
 * CI-token publish. Like token records, a change reaches every Cloudflare
 * location within KV's propagation time (≤ 60 s).
 */

/** The namespace's publishers (damaged entries skipped; none stored → []). */
export async function readPublishers(kv: KvStore, hostname: string, namespace: string): Promise<TrustedPublisher[]> {
  return parsePublisherList(await kv.get(publishersKey(hostname, namespace), 'text'));
}
