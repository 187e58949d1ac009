import { DocumentCache } from '../cache';
import { StoredDocument } from '../document';
import type { ProviderAddress } from '../protocol/address';
import type { Platform } from '../protocol/platform';
import {
  downloadDocumentKey, mirrorIndexKey, mirrorVersionKey, releaseObjectKey, tokenKey, versionsDocumentKey,
} from './layout';

/**
 * The read side of the store, used by the Worker. Each function makes at
 * most one KV read, returns the stored body as is (null when absent), and
 * remembers it in the isolate: immutable documents until evicted, version
 * lists and absences for `listTtlMs`.
 */

const documents = new DocumentCache(32 * 1024 * 1024);

async function readDocument(kv: KVNamespace, key: string, immutable: boolean, listTtlMs: number): Promise<StoredDocument | null> {
  const cached = documents.get(key);
  if (cached !== undefined) return cached;
  const text = await kv.get(key, 'text');
  const document = text === null ? null : new StoredDocument(text);
  documents.set(key, document, document !== null && immutable ? Number.POSITIVE_INFINITY : listTtlMs);
  return document;
}

/** providers.v1 list-versions body. */
export const readVersionsDocument = (kv: KVNamespace, address: ProviderAddress, listTtlMs: number) =>
  readDocument(kv, versionsDocumentKey(address), false, listTtlMs);

/** providers.v1 find-a-package body for one platform (immutable once published). */
export const readDownloadDocument = (
  kv: KVNamespace, address: ProviderAddress, version: string, platform: Platform, listTtlMs: number,
) => readDocument(kv, downloadDocumentKey(address, version, platform), true, listTtlMs);

/** Mirror index.json body. */
export const readMirrorIndex = (kv: KVNamespace, address: ProviderAddress, listTtlMs: number) =>
  readDocument(kv, mirrorIndexKey(address), false, listTtlMs);

/**
 * Mirror VERSION.json body: immutable once published for our own providers;
 * `immutable: false` for a mirrored upstream version, which may gain platforms
 * (then cached for `listTtlMs` like a list).
 */
export const readMirrorVersion = (kv: KVNamespace, address: ProviderAddress, version: string, listTtlMs: number, immutable = true) =>
  readDocument(kv, mirrorVersionKey(address, version), immutable, listTtlMs);

/** A read-token record by the token's SHA-256 (never cached, so revocation takes effect at once). */
export const readTokenRecord = (kv: KVNamespace, tokenSha256Hex: string) => kv.get(tokenKey(tokenSha256Hex), 'text');

/** The R2 object name of a release file; the archive route reads R2 directly with it (streams, ranges). */
export const releaseObject = releaseObjectKey;
