import type { Freshness } from '../document-cache';
import type { ModuleAddress } from '../../protocol/modules-v1';
import { moduleCatalogKey, moduleCommittedRecordKey, moduleDocsKey, moduleDownloadKey, moduleVersionsKey } from '../layout';
import { readDocument } from '../read-document';
import type { BlobStore } from '../store';
import { parseModuleRecord } from './record';
import { downloadBody } from './write';

/**
 * The read side of the module store, used by the Worker: the same reads and
 * caching rules as the providers' (../read-document.ts): at most one KV read,
 * the stored body as is (null when absent), remembered in the isolate
 * (immutable documents until evicted, lists and absences for `listTtlMs`). An
 * optional Freshness is lowered to the expiry of what was returned (pages use it).
 */

/** modules.v1 list-versions body. */
export const readModuleVersions = (kv: KVNamespace, address: ModuleAddress, listTtlMs: number, freshness?: Freshness) =>
  readDocument(kv, moduleVersionsKey(address), false, listTtlMs, { freshness });

/**
 * The version's download document ({"location": …}; immutable once
 * published). A KV miss is answered from the version's committed R2 record
 * (one R2 read), so a listed version always downloads (../read-document.ts).
 */
export const readModuleDownload = (kv: KVNamespace, blobs: BlobStore, address: ModuleAddress, version: string, listTtlMs: number) =>
  readDocument(kv, moduleDownloadKey(address, version), true, listTtlMs, {
    fromRecord: async () => {
      const key = moduleCommittedRecordKey(address, version);
      const object = await blobs.get(key);
      return object ? downloadBody(parseModuleRecord(await object.text(), key)) : null;
    },
  });

/** The version's docs (ModuleDocs JSON; immutable once published). */
export const readModuleDocs = (kv: KVNamespace, address: ModuleAddress, version: string, listTtlMs: number, freshness?: Freshness) =>
  readDocument(kv, moduleDocsKey(address, version), true, listTtlMs, { freshness });

/** The hostname's module catalog (ModuleCatalog JSON). */
export const readModuleCatalog = (kv: KVNamespace, hostname: string, listTtlMs: number, freshness?: Freshness) =>
  readDocument(kv, moduleCatalogKey(hostname), false, listTtlMs, { freshness });
