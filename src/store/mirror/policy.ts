import { formatPolicy, parsePolicy, type MirrorPolicy } from '../../protocol/mirror-policy';
import { mirrorPolicyKey } from '../layout';
import type { KvStore } from '../store';

/**
 * Where the pull-through policy lives: one KV value (`mirror-policy`),
 * written by `npm run mirror -- policy set` and read by the Worker. KV's
 * eventual consistency (≤ 60 s between locations) bounds how soon a changed
 * policy applies everywhere.
 */

/** Stores `policy` (canonical JSON); replaces any earlier one. */
export async function writePolicy(kv: KvStore, policy: MirrorPolicy): Promise<void> {
  await kv.put(mirrorPolicyKey, formatPolicy(policy));
}

/** Removes the policy: pull-through stops, what is held stays served. */
export async function clearPolicy(kv: KvStore): Promise<void> {
  await kv.delete(mirrorPolicyKey);
}

/** The stored policy's text, or null when there is none. */
export async function readPolicyText(kv: Pick<KvStore, 'get'>): Promise<string | null> {
  return kv.get(mirrorPolicyKey, 'text');
}

/**
 * The stored policy, or null when there is none. A stored value that no
 * longer parses (written by a newer version) throws InputError naming the key.
 */
export async function readPolicy(kv: Pick<KvStore, 'get'>): Promise<MirrorPolicy | null> {
  const text = await readPolicyText(kv);
  return text === null ? null : parsePolicy(text, `stored policy (KV ${mirrorPolicyKey})`);
}
