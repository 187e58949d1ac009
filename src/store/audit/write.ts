import { auditEntryKey } from '../layout';
import type { BlobStore } from '../store';
import { validateAuditEntry, type AuditEntry } from './entry';

/** What the audit log needs of a store: R2 only (strongly consistent, conditional writes). Any `Store = { kv, blobs }` fits. */
export interface AuditStore {
  blobs: BlobStore;
}

const MAX_REASON = 2000;

/**
 * Appends one entry to the audit log: a new R2 object under
 * `.audit/YYYY-MM-DD/` (layout.ts), created with `onlyIf: { etagDoesNotMatch: '*' }`
 * (If-None-Match: *), so an entry is never overwritten — a name already
 * taken is retried with another random nonce. `time` defaults to now; a
 * `reason` over 2,000 characters is cut. Returns the stored entry and its
 * key. Throws TypeError for a malformed entry (validateAuditEntry) and the
 * store's error when R2 cannot be written.
 */
export async function appendAuditEntry(store: AuditStore, entry: Omit<AuditEntry, 'time'> & { time?: string }): Promise<{ key: string; entry: AuditEntry }> {
  const stored: AuditEntry = {
    ...entry,
    time: entry.time ?? new Date().toISOString(),
    ...(entry.reason !== undefined ? { reason: entry.reason.slice(0, MAX_REASON) } : {}),
  };
  validateAuditEntry(stored);
  const body = JSON.stringify(stored);
  for (let attempt = 0; attempt < 5; attempt++) {
    const key = auditEntryKey(stored.time, nonce());
    const written = await store.blobs.put(key, body, {
      httpMetadata: { contentType: 'application/json' },
      onlyIf: { etagDoesNotMatch: '*' },
    });
    if (written) return { key, entry: stored };
  }
  throw new Error('audit log: five random entry names in a row were taken; the store is misbehaving');
}

/** 64 random bits in hex. */
function nonce(): string {
  return [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, '0')).join('');
}
