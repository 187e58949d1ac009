import { DocumentCache, type Freshness } from '../document-cache';
import type { ModuleAddress } from '../../protocol/modules-v1';
import { moduleLifecyclePageKey } from '../layout';
import { parseLifecycle, type LifecycleState } from './state';

/**
 * The Worker's read of a module's lifecycle (the KV copy the rebuild writes,
 * src/store/lifecycle/module-lists.ts): one KV read on a miss, remembered in
 * the isolate for `listTtlMs` like the version list it belongs with, parsed
 * once per read from KV.
 * Providers carry theirs in the page data (src/store/pages/read.ts).
 */

/** A parsed lifecycle as cached (null state: the copy was unreadable), sized by its text. */
class Cached {
  constructor(
    readonly state: LifecycleState | null,
    readonly cacheBytes: number,
  ) {}
}

const documents = new DocumentCache<Cached>(1024 * 1024);

/** The module's lifecycle, null when nothing was ever marked (or the copy is unreadable: the page then shows none). */
export async function readModuleLifecyclePage(
  kv: KVNamespace,
  address: ModuleAddress,
  listTtlMs: number,
  freshness?: Freshness,
): Promise<LifecycleState | null> {
  const key = moduleLifecyclePageKey(address);
  let cached = documents.get(key, Date.now(), freshness);
  if (cached === undefined) {
    const text = await kv.get(key, 'text');
    cached = text === null ? null : new Cached(parsed(text, key), text.length * 3);
    documents.set(key, cached, listTtlMs, Date.now(), freshness);
  }
  return cached?.state ?? null;
}

function parsed(text: string, key: string): LifecycleState | null {
  try {
    return parseLifecycle(text, key);
  } catch {
    return null;
  }
}
