import { DocumentCache } from '../cache';
import { StoredDocument } from '../document';
import { storedResponse, type EdgeCache } from '../http/edge-cache';
import type { ProviderAddress } from '../protocol/address';
import type { Platform } from '../protocol/platform';
import {
  downloadDocumentKey, mirrorIndexKey, mirrorVersionKey, releaseObjectKey, tokenKey, versionsDocumentKey,
} from './layout';

/**
 * The read side of the store, used by the Worker. Each function makes at
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

async function readDocument(
  kv: KVNamespace, key: string, immutable: boolean, listTtlMs: number, edgeCache: EdgeCache | null = null,
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

/** providers.v1 list-versions body. */
export const readVersionsDocument = (kv: KVNamespace, address: ProviderAddress, listTtlMs: number) =>
  readDocument(kv, versionsDocumentKey(address), false, listTtlMs);

/** providers.v1 find-a-package body for one platform (immutable once published). */
export const readDownloadDocument = (
  kv: KVNamespace, address: ProviderAddress, version: string, platform: Platform, listTtlMs: number,
  edgeCache: EdgeCache | null = null,
) => readDocument(kv, downloadDocumentKey(address, version, platform), true, listTtlMs, edgeCache);

/** Mirror index.json body. */
export const readMirrorIndex = (kv: KVNamespace, address: ProviderAddress, listTtlMs: number) =>
  readDocument(kv, mirrorIndexKey(address), false, listTtlMs);

/**
 * Mirror VERSION.json body: immutable once published for our own providers
 * (isolate until evicted, edge cache); `immutable: false` for a mirrored
 * upstream version, which may gain platforms: cached for `listTtlMs` like a
 * list, never in the edge cache.
 */
export const readMirrorVersion = (
  kv: KVNamespace, address: ProviderAddress, version: string, listTtlMs: number, edgeCache: EdgeCache | null = null, immutable = true,
) => readDocument(kv, mirrorVersionKey(address, version), immutable, listTtlMs, edgeCache);

/** A read-token record by the token's SHA-256 (never cached, so revocation takes effect at once). */
export const readTokenRecord = (kv: KVNamespace, tokenSha256Hex: string) => kv.get(tokenKey(tokenSha256Hex), 'text');

/** The R2 object name of a release file; the archive route reads R2 directly with it (streams, ranges). */
export const releaseObject = releaseObjectKey;
