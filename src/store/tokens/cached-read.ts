import { DocumentCache } from '../document-cache';
import { tokenKey } from '../layout';
import { parseTokenRecord, type TokenRecord } from './read';

/**
 * Read-token records as the Worker's read path sees them: kept in the isolate
 * for at most TOKEN_CACHE_MS after KV returned them, so metadata requests with
 * a token the isolate has already seen make no KV read. The agreed revocation
 * bound is 60 s at every location (docs/private.md): KV is asked with its
 * minimum cacheTtl (30 s, how long a location may answer from its own copy)
 * and the isolate keeps what it got for at most 30 s more, so a deleted
 * record is seen as gone within 30 + 30 s. Only records that exist are kept:
 * an unknown token is read from KV every time (and a new token works at once
 * wherever KV has no cached "not found"), and random tokens cannot fill the
 * cache. What is kept is the stored text and its parse, nothing decided from
 * it: the caller (src/access/tokens.ts checkTokenRecord) checks it — hash,
 * expiry, purpose — on every request. Revocations made through this isolate (the
 * token pages, deleteTokenRecord) forget the record here at once. Publishing
 * never reads through this cache (src/access/publish-auth.ts reads KV itself).
 */

/** How long an isolate keeps a token record: half the 60 s revocation bound (KV's location cache takes the other half). */
export const TOKEN_CACHE_MS = 30_000;
/** KV's cacheTtl for token-record reads: its minimum, in seconds. */
export const TOKEN_KV_CACHE_TTL_SECONDS = 30;

/** A stored record as read: its text, and the record parsed once (null when damaged: the token is refused). */
export interface StoredTokenRecord {
  text: string;
  record: TokenRecord | null;
}

const records = new DocumentCache<StoredTokenRecord & { cacheBytes: number }>(1024 * 1024);

/**
 * The stored record of the token with this SHA-256 (lower-case hex), parsed
 * once per read (parseTokenRecord), null when KV has none: from the isolate
 * when KV returned it less than TOKEN_CACHE_MS before `now`, else one KV
 * read. Callers must not change the record. Rejects with KV's error.
 */
export async function readTokenRecordCached(kv: KVNamespace, tokenSha256Hex: string, now = Date.now()): Promise<StoredTokenRecord | null> {
  const kept = records.get(tokenSha256Hex, now);
  if (kept) return kept;
  const text = await kv.get(tokenKey(tokenSha256Hex), { type: 'text', cacheTtl: TOKEN_KV_CACHE_TTL_SECONDS });
  if (text === null) return null;
  const stored = { text, record: parseTokenRecord(text), cacheBytes: text.length * 2 };
  records.set(tokenSha256Hex, stored, TOKEN_CACHE_MS, now);
  return stored;
}

/** Forgets the record of this token in this isolate (it was just revoked or rewritten here). */
export function forgetTokenRecord(tokenSha256Hex: string): void {
  records.delete(tokenSha256Hex);
}

/** Forgets every kept record: what a fresh isolate sees (for tests and the bench). */
export function forgetTokenRecords(): void {
  records.clear();
}
