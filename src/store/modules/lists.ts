import { putHotKey } from '../kv-write';
import { compareVersionsDescending } from '../../protocol/version';
import { formatModuleAddress, moduleVersionsBody, type ModuleAddress } from '../../protocol/modules-v1';
import {
  moduleCatalogKey,
  moduleCommittedRecordPrefix,
  moduleCommittedRecordsOfHostPrefix,
  moduleLifecycleKey,
  moduleRecordPrefix,
  moduleRecordsOfHostPrefix,
  moduleVersionsKey,
  parseModuleCommittedRecordKey,
  parseModuleRecordKey,
} from '../layout';
import type { Store } from '../store';
import { listAllKeys, listAllObjectKeys } from '../list';
import { readRecordObjects, warnOnce, type PublishProgress } from '../records';
import type { ModuleCatalog } from './types';
import { parseModuleRecord } from './record';
import { readLifecycle } from '../lifecycle/change';
import { withoutWithdrawnInCatalog, writeModuleLifecyclePage } from '../lifecycle/module-lists';
import { withoutWithdrawn } from '../lifecycle/state';
import { DamagedRecordError, ListRebuildRaceError } from '../errors';

/**
 * A module's version list and the hostname's module catalog, rebuilt from the committed records (write.ts calls
 * it last in a publish; the lifecycle and a bulk import call it on their own).
 */

/**
 * Rewrites the module's version list and the hostname's catalog from the
 * committed records in R2 (strongly consistent; this module's records are
 * read and validated — a damaged one is reported as a 'warning' with its key
 * and skipped), plus KV records of versions published before R2 records
 * existed (by key). Writes nothing when both are current; lists again after
 * writing and repeats while records appeared meanwhile (writers without the
 * lease); throws ListRebuildRaceError when they keep appearing.
 */
export async function rebuildModuleIndex(
  store: Store,
  address: ModuleAddress,
  progress: PublishProgress = () => {},
  check: () => void = () => {},
): Promise<void> {
  const { kv, blobs } = store;
  const onDamaged = warnOnce(progress);
  for (let attempt = 0; attempt < 10; attempt++) {
    const versions = await moduleVersions(store, address, onDamaged);
    // Lifecycle (src/store/lifecycle/): withdrawn versions leave the list and the catalog.
    const lifecycle = await readLifecycle(blobs, moduleLifecycleKey(address));
    const listed = withoutWithdrawn(versions, lifecycle, (v) => v);
    const body = JSON.stringify(moduleVersionsBody(listed));
    const catalog = JSON.stringify(await withoutWithdrawnInCatalog(blobs, await buildCatalog(store, address, listed), address, lifecycle));
    const [storedBody, storedCatalog] = await Promise.all([kv.get(moduleVersionsKey(address), 'text'), kv.get(moduleCatalogKey(address.hostname), 'text')]);
    if (storedBody !== body || storedCatalog !== catalog) {
      progress({ step: 'index', detail: `${versions.length} versions of ${formatModuleAddress(address)}` });
      check();
      if (storedBody !== body) await putHotKey(kv, moduleVersionsKey(address), body);
      if (storedCatalog !== catalog) await putHotKey(kv, moduleCatalogKey(address.hostname), catalog);
    }
    // Done unless a version was committed meanwhile (only writers without the lease can do that).
    const now = await moduleVersions(store, address, () => {});
    if (now.every((v) => versions.includes(v))) {
      await writeModuleLifecyclePage(kv, address, lifecycle, check);
      return;
    }
  }
  throw new ListRebuildRaceError(`the version list of ${formatModuleAddress(address)} kept changing while being rebuilt; run the publish again`);
}

/** The module's listed versions, newest first: valid R2 records, plus legacy KV records without one. */
async function moduleVersions({ kv, blobs }: Store, address: ModuleAddress, onDamaged: (error: DamagedRecordError) => void): Promise<string[]> {
  const versions = new Set<string>();
  const damaged = new Set<string>();
  const records = await readRecordObjects(blobs, moduleCommittedRecordPrefix(address), parseModuleRecord, (error) => {
    const parsed = parseModuleCommittedRecordKey(error.key);
    if (parsed) damaged.add(parsed.version);
    onDamaged(error);
  });
  for (const record of records) versions.add(record.version);
  const prefix = moduleRecordPrefix(address);
  for (const key of await listAllKeys(kv, prefix)) {
    const version = key.slice(prefix.length);
    if (!damaged.has(version)) versions.add(version);
  }
  return [...versions].sort(compareVersionsDescending);
}

/**
 * The hostname's catalog: every module with a record (R2 keys, strongly
 * consistent, plus legacy KV keys), with `address`'s versions as just
 * validated (`versions`).
 */
async function buildCatalog({ kv, blobs }: Store, address: ModuleAddress, versions: readonly string[]): Promise<ModuleCatalog> {
  const modules = new Map<string, ModuleCatalog['modules'][number]>();
  const add = (parsed: { address: ModuleAddress; version: string } | null) => {
    if (!parsed) return;
    const { namespace, name, system } = parsed.address;
    const id = `${namespace}/${name}/${system}`;
    const entry = modules.get(id) ?? { namespace, name, system, versions: [] };
    if (!entry.versions.includes(parsed.version)) entry.versions.push(parsed.version);
    modules.set(id, entry);
  };
  for (const key of await listAllObjectKeys(blobs, moduleCommittedRecordsOfHostPrefix(address.hostname))) add(parseModuleCommittedRecordKey(key));
  for (const key of await listAllKeys(kv, moduleRecordsOfHostPrefix(address.hostname))) add(parseModuleRecordKey(key));
  const self = `${address.namespace}/${address.name}/${address.system}`;
  if (versions.length > 0) modules.set(self, { namespace: address.namespace, name: address.name, system: address.system, versions: [...versions] });
  else modules.delete(self);
  const list = [...modules.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, m]) => ({
      ...m,
      versions: m.versions.sort(compareVersionsDescending),
    }));
  return { modules: list };
}
