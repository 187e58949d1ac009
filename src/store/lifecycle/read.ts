import { DocumentCache, type Freshness } from '../document-cache';
import { StoredDocument } from '../../http/stored-body';
import type { ModuleAddress } from '../../protocol/modules-v1';
import { moduleLifecyclePageKey } from '../layout';
import { parseLifecycle, type LifecycleState } from './state';

/**
 * The Worker's read of a module's lifecycle (the KV copy the rebuild writes,
 * src/store/lifecycle/module-lists.ts): one KV read on a miss, remembered in
 * the isolate for `listTtlMs` like the version list it belongs with.
 * Providers carry theirs in the page data (src/store/pages/read.ts).
 */

const documents = new DocumentCache(1024 * 1024);

/** The module's lifecycle, null when nothing was ever marked (or the copy is unreadable: the page then shows none). */
export async function readModuleLifecyclePage(kv: KVNamespace, address: ModuleAddress, listTtlMs: number, freshness?: Freshness): Promise<LifecycleState | null> {
  const key = moduleLifecyclePageKey(address);
  let document = documents.get(key, Date.now(), freshness);
  if (document === undefined) {
    const text = await kv.get(key, 'text');
    document = text === null ? null : new StoredDocument(text);
    documents.set(key, document, listTtlMs, Date.now(), freshness);
  }
  if (document === null) return null;
  try {
    return parseLifecycle(document.text, key);
  } catch {
    return null;
  }
}
