import { DocumentCache, type Freshness } from './document-cache';
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
 *
 * A version's documents given `fromRecord` never answer "absent" while the
 * version is committed: KV keeps a location's "not found" for up to a minute
 * (cacheTtl), independently of the lists, so a location can list a version
 * (its list refreshed) while still holding the miss of a document asked for
 * before the publish. On a KV miss the document is built from the version's
 * R2 record (strongly consistent, the source of truth; the same function the
 * publish wrote it with, so the same bytes), then served and cached like a
 * KV hit. Such an absence is not remembered in the isolate (the version may
 * be committed the next moment): each answer "absent" costs one KV read and
 * one R2 read (class B).
 */

const documents = new DocumentCache(32 * 1024 * 1024);

/** The isolate's document cache figures (for the bench's soak: its byte bound under sustained load). */
export const documentCacheStats = () => documents.stats();

/**
 * The body a version's document would have, built from the version's
 * committed R2 record; null when no record is committed (or it has no such
 * document, e.g. a platform the version lacks).
 */
export type FromRecord = () => Promise<string | null>;

export interface ReadOptions {
  /** The location's edge cache, for immutable documents. */
  edgeCache?: EdgeCache | null;
  /** Where the document comes from when KV has none (see above). */
  fromRecord?: FromRecord;
  /** Lowered to the expiry of what is returned (pages use it). */
  freshness?: Freshness;
}

/**
 * The stored body under `key`, null when absent (at most one KV read, and
 * one R2 read through `fromRecord` on a KV miss; see above for what is
 * cached where). Rejects with KV's or R2's error when a read fails, and with
 * DamagedRecordError when the record `fromRecord` reads is damaged.
 */
export async function readDocument(
  kv: KVNamespace,
  key: string,
  immutable: boolean,
  listTtlMs: number,
  { edgeCache = null, fromRecord, freshness }: ReadOptions = {},
): Promise<StoredDocument | null> {
  const cached = documents.get(key, Date.now(), freshness);
  if (cached !== undefined) return cached;
  const edge = immutable ? edgeCache : null;
  const hit = await edge?.match('kv', key);
  let text = hit ? await hit.text() : null;
  if (text === null) {
    text = await kv.get(key, 'text');
    if (text === null && fromRecord) text = await fromRecord();
    if (text !== null) edge?.put('kv', key, storedResponse(text, { 'content-type': 'application/json' }));
  }
  const document = text === null ? null : new StoredDocument(text);
  const ttl = document !== null && immutable ? Number.POSITIVE_INFINITY : document === null && fromRecord ? 0 : listTtlMs;
  documents.set(key, document, ttl, Date.now(), freshness);
  return document;
}

/** Forgets every document this isolate remembers: what a fresh isolate sees (for tests and the bench). */
export function forgetIsolateDocuments(): void {
  documents.clear();
}
