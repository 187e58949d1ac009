import { DocumentCache } from './document-cache';
import { StoredDocument } from './stored-body';
import { storedResponse, type EdgeCache } from './edge-cache';

/**
 * The read side of the store, used by the Worker: readDocument makes at
 * most one KV read, returns the stored body as is (null when absent), and
 * remembers it in the isolate: immutable documents until evicted, version
 * lists and absences for `listTtlMs`. Immutable documents given an edge
 * cache are also looked up in, and after a KV read put into, the location's
 * cache, so any isolate of that location answers them without KV; lists and
 * absences never go there (they must change when a version is published).
 */

const documents = new DocumentCache(32 * 1024 * 1024);

/** The isolate's document cache figures (for the bench's soak: its byte bound under sustained load). */
export const documentCacheStats = () => documents.stats();

/**
 * The stored body under `key`, null when absent (at most one KV read; see
 * above for what is cached where). Rejects with KV's error when the read fails.
 */
export async function readDocument(
  kv: KVNamespace,
  key: string,
  immutable: boolean,
  listTtlMs: number,
  edgeCache: EdgeCache | null = null,
): Promise<StoredDocument | null> {
  const cached = documents.get(key);
  if (cached !== undefined) return cached;
  const edge = immutable ? edgeCache : null;
  const hit = await edge?.match('kv', key);
  let text = hit ? await hit.text() : null;
  if (text === null) {
    text = await kv.get(key, 'text');
    if (text !== null) edge?.put('kv', key, storedResponse(text, { 'content-type': 'application/json' }));
  }
  const document = text === null ? null : new StoredDocument(text);
  documents.set(key, document, document !== null && immutable ? Number.POSITIVE_INFINITY : listTtlMs);
  return document;
}

/** Forgets every document this isolate remembers: what a fresh isolate sees (for tests and the bench). */
export function forgetIsolateDocuments(): void {
  documents.clear();
}
