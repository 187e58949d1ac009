import type { StoredDocument } from './stored-body';

/**
 * A bounded in-isolate cache of stored documents, so repeated requests skip
 * KV. Immutable documents may stay until evicted; mutable ones (version lists,
 * "not found") expire after the configured seconds, which bounds how late a
 * newly published version is listed. Least recently used entries are evicted
 * once the total size passes the byte budget.
 */
export class DocumentCache<Value extends { cacheBytes: number } = StoredDocument> {
  private readonly entries = new Map<string, { body: Value | null; expires: number; bytes: number }>();
  private bytes = 0;
  private evicted = 0;

  constructor(private readonly maxBytes: number) {}

  /**
   * The cached body (null = known absent), or undefined when not cached or
   * expired. A hit lowers `freshness` to the entry's expiry.
   */
  get(key: string, now = Date.now(), freshness?: Freshness): Value | null | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= now) {
      this.remove(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    freshness?.note(entry.expires);
    return entry.body;
  }

  /**
   * Caches `body` (just read from the store) for `ttlMs`; lowers `freshness`
   * to now + ttlMs whether or not the entry fits, since the body is fresh now.
   */
  set(key: string, body: Value | null, ttlMs: number, now = Date.now(), freshness?: Freshness): void {
    freshness?.note(now + Math.max(ttlMs, 0));
    if (ttlMs <= 0) return;
    const bytes = (body?.cacheBytes ?? 0) + key.length * 2 + 64;
    if (bytes > this.maxBytes / 4) return;
    this.remove(key);
    this.entries.set(key, { body, expires: now + ttlMs, bytes });
    this.bytes += bytes;
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(oldest);
      this.evicted++;
    }
  }

  /** Forgets the entry under `key`, if any. */
  delete(key: string): void {
    this.remove(key);
  }

  /** Empties the cache. */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Entries, the bytes they are counted at (never above maxBytes after a set), and how many were evicted for room. */
  stats(): { entries: number; bytes: number; maxBytes: number; evictions: number } {
    return { entries: this.entries.size, bytes: this.bytes, maxBytes: this.maxBytes, evictions: this.evicted };
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.bytes -= entry.bytes;
    this.entries.delete(key);
  }
}

/**
 * The instant until which an answer built from cached store reads is fresh
 * enough to reuse: the earliest expiry of the entries it was built from (a
 * body just read from the store counts as expiring after its full lifetime).
 * A cache of such answers (rendered pages) must expire no later, or its
 * staleness would add to theirs. Infinity when only immutable bodies were read.
 */
export class Freshness {
  until = Number.POSITIVE_INFINITY;

  note(expires: number): void {
    if (expires < this.until) this.until = expires;
  }
}
