import { describePublisher, MAX_PUBLISHERS, parsePublisherInput, type PublisherInput, type TrustedPublisher } from '../../src/identity/publishers';
import { InputError } from '../../src/protocol/errors';
import { readPublishers } from '../../src/store/publishers/read';
import { writePublishers } from '../../src/store/publishers/write';
import type { KvStore } from '../../src/store/store';

/**
 * The publisher commands over any KvStore (local state or --remote KV):
 * scripts/publisher.ts parses arguments and prints; these do the work.
 * Input is validated completely before anything is read or written.
 */

/**
 * Adds a trusted publisher to the namespace. Returns it and whether it was
 * added (false: the same publisher was already there, nothing written).
 * Throws InputError for bad input (see parsePublisherInput) or when the
 * namespace already has MAX_PUBLISHERS.
 */
export async function addPublisher(kv: KvStore, hostname: string, namespace: string, input: PublisherInput): Promise<{ publisher: TrustedPublisher; added: boolean }> {
  const publisher = await parsePublisherInput(input);
  const existing = await readPublishers(kv, hostname, namespace);
  const same = existing.find((p) => p.id === publisher.id);
  if (same) return { publisher: same, added: false };
  if (existing.length >= MAX_PUBLISHERS) throw new InputError(`namespace ${namespace} already has ${MAX_PUBLISHERS} trusted publishers; remove one first`);
  await writePublishers(kv, hostname, namespace, [...existing, publisher]);
  return { publisher, added: true };
}

/** The namespace's publishers, oldest first. */
export async function listPublishers(kv: KvStore, hostname: string, namespace: string): Promise<TrustedPublisher[]> {
  return readPublishers(kv, hostname, namespace);
}

/**
 * Removes the publisher with this id (12 hex digits, as `list` prints).
 * Returns it; throws InputError when the namespace has none with that id.
 */
export async function removePublisher(kv: KvStore, hostname: string, namespace: string, id: string): Promise<TrustedPublisher> {
  const wanted = id.trim().toLowerCase();
  if (!/^[0-9a-f]{12}$/.test(wanted)) throw new InputError(`publisher id "${id}" must be the 12 hex digits npm run publisher -- list prints`);
  const existing = await readPublishers(kv, hostname, namespace);
  const found = existing.find((p) => p.id === wanted);
  if (!found) {
    throw new InputError(`namespace ${namespace} has no trusted publisher ${wanted} (it has: ${existing.map((p) => p.id).join(', ') || 'none'})`);
  }
  await writePublishers(kv, hostname, namespace, existing.filter((p) => p.id !== wanted));
  return found;
}

/** The listing as text lines (a header, then one line per publisher). */
export function formatPublishers(hostname: string, namespace: string, publishers: readonly TrustedPublisher[]): string {
  if (publishers.length === 0) return `${hostname}/${namespace} has no trusted publishers (npm run publisher -- add --namespace ${namespace} …)`;
  return [`trusted publishers of ${hostname}/${namespace}:`, ...publishers.map((p) => `  ${describePublisher(p)}`)].join('\n');
}
