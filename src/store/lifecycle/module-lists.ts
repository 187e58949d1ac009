import { putHotKey } from '../kv-write';
import type { ModuleAddress } from '../../protocol/modules-v1';
import { moduleLifecycleOfHostPrefix, moduleLifecyclePageKey } from '../layout';
import { listAllObjectKeys } from '../list';
import type { ModuleCatalog } from '../modules/types';
import type { BlobStore, KvStore } from '../store';
import { readLifecycle } from './change';
import { isEmptyLifecycle, serializeLifecycle, withdrawnVersions, type LifecycleState } from './state';

/**
 * What a module rebuild (src/store/modules/lists.ts rebuildModuleIndex)
 * needs of the lifecycle: the hostname's catalog without withdrawn versions
 * (every module's lifecycle object is read: one R2 list, plus one read per
 * module that has one), and the KV copy the module page reads.
 */

/** `catalog` without any module's withdrawn versions; `self`'s state is `selfState` (already read). Throws DamagedRecordError for a damaged object. */
export async function withoutWithdrawnInCatalog(
  blobs: BlobStore,
  catalog: ModuleCatalog,
  self: ModuleAddress,
  selfState: LifecycleState,
): Promise<ModuleCatalog> {
  const prefix = moduleLifecycleOfHostPrefix(self.hostname);
  const keys = await listAllObjectKeys(blobs, prefix);
  if (keys.length === 0) return catalog;
  const withdrawnByModule = new Map<string, Set<string>>();
  for (const key of keys) {
    const id = key.slice(prefix.length).replace(/\.json$/, '');
    const selfId = `${self.namespace}/${self.name}/${self.system}`;
    const state = id === selfId ? selfState : await readLifecycle(blobs, key);
    withdrawnByModule.set(id, withdrawnVersions(state));
  }
  return {
    modules: catalog.modules
      .map((m) => {
        const withdrawn = withdrawnByModule.get(`${m.namespace}/${m.name}/${m.system}`);
        return withdrawn ? { ...m, versions: m.versions.filter((v) => !withdrawn.has(v)) } : m;
      })
      .filter((m) => m.versions.length > 0),
  };
}

/** Writes the module page's copy of `state` when it differs from the stored one (none is written while nothing was ever marked). */
export async function writeModuleLifecyclePage(kv: KvStore, address: ModuleAddress, state: LifecycleState, check: () => void): Promise<void> {
  const key = moduleLifecyclePageKey(address);
  const stored = await kv.get(key, 'text');
  const text = serializeLifecycle(state);
  if (stored === text || (stored === null && isEmptyLifecycle(state))) return;
  check();
  await putHotKey(kv, key, text);
}
