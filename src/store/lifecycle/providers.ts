import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { sortVersions } from '../../protocol/version';
import { committedRecordPrefix, providerLifecycleKey, versionRecordPrefix } from '../layout';
import { listAllKeys, listAllObjectKeys } from '../list';
import { updateProviderLists } from '../providers/lists';
import type { PublishProgress } from '../records';
import type { Store } from '../store';
import { changeLifecycle, checkLifecycleTarget, type LifecycleAction, type LifecycleSubject } from './change';
import type { LifecycleState } from './state';

/**
 * Deprecating, withdrawing and restoring a provider's versions (the write
 * side; scripts/lifecycle.ts and the publish API call it). The caller holds
 * the provider's lease (providerLeaseName): the lifecycle object is written
 * with a conditional R2 write (the commit point), then the provider's lists
 * and pages are rewritten from the provider's index and the new state — what
 * a publish writes them from, so a change killed after its commit is completed
 * by running it (or any publish of the provider) again. Its cost does not grow
 * with the number of versions beyond one R2 list per 1,000 (the rebuild from
 * every record it used before read each one: 1,019 storage operations for
 * 1,000 versions, over a Worker invocation's 1,000).
 */

export interface LifecycleResult {
  /** False when the state already was what the action asks for (nothing written but the rebuild). */
  changed: boolean;
  state: LifecycleState;
  /** Published versions, ascending. */
  versions: string[];
}

/** Every version with a committed record (R2 keys, plus KV records of versions published before R2 records), ascending. */
export async function committedProviderVersions({ kv, blobs }: Store, address: ProviderAddress): Promise<string[]> {
  const versions = new Set<string>();
  const prefix = committedRecordPrefix(address);
  for (const key of await listAllObjectKeys(blobs, prefix)) versions.add(key.slice(prefix.length).replace(/\.json$/, ''));
  const legacy = versionRecordPrefix(address);
  for (const key of await listAllKeys(kv, legacy)) versions.add(key.slice(legacy.length));
  return sortVersions([...versions]);
}

const subject = (address: ProviderAddress): LifecycleSubject => ({ what: `provider ${formatAddress(address)}`, form: 'NAMESPACE/TYPE' });

/**
 * The provider's published versions, ascending, when it has `version` (any version, without one); throws
 * NotStoredError otherwise (checkLifecycleTarget). Reads only (one R2 list per 1,000 versions and one KV list):
 * `npm run lifecycle` and the publish API call it before they take the lease or write an audit entry, so a
 * change of an unknown provider or version writes nothing; `status` calls it too.
 */
export async function knownProviderVersions(store: Store, address: ProviderAddress, version: string | undefined): Promise<string[]> {
  const versions = await committedProviderVersions(store, address);
  checkLifecycleTarget(versions, version, subject(address));
  return versions;
}

/**
 * Applies `action` to the provider at `address`; call it holding the provider's lease, having called
 * knownProviderVersions before taking it. Throws NotStoredError when the provider has no published version,
 * or the action names a version that was never published (listing the published ones), checked again on
 * what is read under the lease; LeaseLostError from `lease.check()`. Idempotent: the same action again
 * changes nothing.
 */
export async function changeProviderLifecycle(
  store: Store,
  address: ProviderAddress,
  action: LifecycleAction,
  options: { lease?: { check(): void }; progress?: PublishProgress; now?: Date } = {},
): Promise<LifecycleResult> {
  const versions = await committedProviderVersions(store, address);
  return changeLifecycle(
    store.blobs,
    providerLifecycleKey(address),
    versions,
    action,
    subject(address),
    (check) => updateProviderLists(store, address, { records: [] }, { ...(options.progress ? { progress: options.progress } : {}), check, rewrite: true }),
    options,
  );
}
