import type { ModuleAddress } from '../protocol/modules-v1';
import { checkModuleKeys } from './key-limits';
import type { KvStore } from './store-types';
import { checkModuleCatalogRoom } from './value-limits';

/**
 * Workers KV's limits a new module version must fit, checked before anything of it is fetched or written: its
 * keys (and its package's name) within 512 bytes (checkModuleKeys) and the hostname's module catalogue within
 * 25 MiB with it added (checkModuleCatalogRoom). The one check every way a module version comes in calls: the
 * publish API at its start (src/routes/publish/modules.ts) and the module proxy before it asks the upstream for
 * the package (src/mirror/modules/proxy.ts). Throws InputError (400) naming the limit and the fix; 1 KV read.
 */
export async function checkNewModuleVersion(kv: Pick<KvStore, 'get'>, address: ModuleAddress, version: string, what: string): Promise<void> {
  checkModuleKeys(address, version, what);
  await checkModuleCatalogRoom(kv, address, version);
}
