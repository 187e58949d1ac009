import type { TrustedPublisher } from './record';
import { publishersKey } from '../layout';
import type { KvStore } from '../store';

/** Replaces the namespace's trusted publishers (./read.ts; deletes the key when the list is empty). */
export async function writePublishers(kv: KvStore, hostname: string, namespace: string, publishers: readonly TrustedPublisher[]): Promise<void> {
  if (publishers.length === 0) await kv.delete(publishersKey(hostname, namespace));
  else await kv.put(publishersKey(hostname, namespace), JSON.stringify(publishers));
}
