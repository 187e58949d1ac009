import { formatModuleAddress, type ModuleAddress } from '../../protocol/modules-v1';
import { moduleCommittedRecordPrefix, moduleLifecycleKey, moduleRecordPrefix } from '../layout';
import { listAllKeys, listAllObjectKeys } from '../list';
import { rebuildModuleIndex } from '../modules/lists';
import { compareVersionsDescending } from '../../protocol/version';
import type { PublishProgress } from '../records';
import type { Store } from '../store';
import { changeLifecycle, checkLifecycleTarget, type LifecycleAction, type LifecycleSubject } from './change';
import type { LifecycleResult } from './providers';

/**
 * Deprecating, withdrawing and restoring a module's versions: the module
 * twin of src/store/lifecycle/providers.ts (the caller holds the module's
 * lease, moduleLeaseName; the conditional R2 write is the commit point; the
 * version list, the catalog and the page's copy are rebuilt after it).
 * modules.v1 has no warnings field, so a module deprecation reaches users on
 * the pages only; a withdrawal leaves the version list (constraints no longer
 * select it) while its download document and package stay reachable.
 */

/** Every version with a committed record (R2 keys, plus legacy KV records), ascending. */
export async function committedModuleVersions({ kv, blobs }: Store, address: ModuleAddress): Promise<string[]> {
  const versions = new Set<string>();
  const prefix = moduleCommittedRecordPrefix(address);
  for (const key of await listAllObjectKeys(blobs, prefix)) versions.add(key.slice(prefix.length).replace(/\.json$/, ''));
  const legacy = moduleRecordPrefix(address);
  for (const key of await listAllKeys(kv, legacy)) versions.add(key.slice(legacy.length));
  return [...versions].sort(compareVersionsDescending).reverse();
}

const subject = (address: ModuleAddress): LifecycleSubject => ({ what: `module ${formatModuleAddress(address)}`, form: 'NAMESPACE/NAME/SYSTEM' });

/**
 * The module's published versions, ascending, when it has `version` (any version, without one); throws
 * NotStoredError otherwise (checkLifecycleTarget). Reads only: `npm run lifecycle` and the publish API call it
 * before they take the lease or write an audit entry, so a change of an unknown module or version writes
 * nothing; `status` calls it too.
 */
export async function knownModuleVersions(store: Store, address: ModuleAddress, version: string | undefined): Promise<string[]> {
  const versions = await committedModuleVersions(store, address);
  checkLifecycleTarget(versions, version, subject(address));
  return versions;
}

/**
 * Applies `action` to the module at `address`; call it holding the module's lease, having called
 * knownModuleVersions before taking it. Throws NotStoredError when the module has no published version or
 * the action names a version that was never published (listing the published ones), checked again on what
 * is read under the lease; LeaseLostError from `lease.check()`. Idempotent.
 */
export async function changeModuleLifecycle(
  store: Store,
  address: ModuleAddress,
  action: LifecycleAction,
  options: { lease?: { check(): void }; progress?: PublishProgress; now?: Date } = {},
): Promise<LifecycleResult> {
  const versions = await committedModuleVersions(store, address);
  return changeLifecycle(
    store.blobs,
    moduleLifecycleKey(address),
    versions,
    action,
    subject(address),
    (check) => rebuildModuleIndex(store, address, options.progress, check),
    options,
  );
}
