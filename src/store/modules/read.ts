import { DocumentCache, type Freshness } from '../document-cache';
import { StoredDocument } from '../stored-body';
import type { ModuleAddress } from '../../protocol/modules-v1';
import { moduleCatalogKey, moduleDocsKey, moduleDownloadKey, moduleVersionsKey } from '../layout';

/**
 * The read side of the module store, used by the Worker. Each function makes
 * at most one KV read, returns the stored body as is (null when absent) and
 * remembers it in the isolate: immutable documents until evicted, lists and
 * absences for `listTtlMs` — the same rules as src/store/providers/read.ts. An optional
 * Freshness is lowered to the expiry of what was returned (pages use it).
 */

const documents = new DocumentCache(16 * 1024 * 1024);

async function readDocument(kv: KVNamespace, key: string, immutable: boolean, listTtlMs: number, freshness?: Freshness): Promise<StoredDocument | null> {
  const cached = documents.get(key, Date.now(), freshness);
  if (cached !== undefined) return cached;
  const text = await kv.get(key, 'text');
  const document = text === null ? null : new StoredDocument(text);
  documents.set(key, document, document !== null && immutable ? Number.POSITIVE_INFINITY : listTtlMs, Date.now(), freshness);
  return document;
}

/** modules.v1 list-versions body. */
export const readModuleVersions = (kv: KVNamespace, address: ModuleAddress, listTtlMs: number, freshness?: Freshness) =>
  readDocument(kv, moduleVersionsKey(address), false, listTtlMs, freshness);

/** The version's download document ({"location": …}; immutable once published). */
export const readModuleDownload = (kv: KVNamespace, address: ModuleAddress, version: string, listTtlMs: number) =>
  readDocument(kv, moduleDownloadKey(address, version), true, listTtlMs);

/** The version's docs (ModuleDocs JSON; immutable once published). */
export const readModuleDocs = (kv: KVNamespace, address: ModuleAddress, version: string, listTtlMs: number, freshness?: Freshness) =>
  readDocument(kv, moduleDocsKey(address, version), true, listTtlMs, freshness);

/** The hostname's module catalog (ModuleCatalog JSON). */
export const readModuleCatalog = (kv: KVNamespace, hostname: string, listTtlMs: number, freshness?: Freshness) =>
  readDocument(kv, moduleCatalogKey(hostname), false, listTtlMs, freshness);
