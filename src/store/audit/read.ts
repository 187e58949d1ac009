import { auditDayPrefix, auditKeyTime, auditPrefix } from '../layout';
import { listAllObjectKeys } from '../list';
import { entryNamespaces, parseAuditEntry, type AuditEntry, type AuditOutcome } from './entry';
import type { AuditStore } from './write';

/** The most entry objects one query reads (R2 gets), whatever it asks for: the rest is behind `next`. */
export const MAX_AUDIT_READS = 1000;

export interface AuditQuery {
  /** Only entries at or after this time (ISO 8601 or a Date). Default: every entry. */
  since?: string | Date;
  /** Only entries concerning this namespace (see entryNamespaces). */
  namespace?: string;
  /** Only entries with this outcome (`ok`: the writes that happened, however many refusals surround them). */
  outcome?: AuditOutcome;
  /** Now, for tests (default the clock). */
  now?: Date;
  /**
   * Newest first, and stop after this many matching entries (a page showing
   * the latest). Without it the listing goes oldest first.
   */
  newest?: number;
  /** Entry objects read at most (default and ceiling MAX_AUDIT_READS). */
  maxReads?: number;
  /** Where the previous page stopped (its `next`): only entries after it in the listing's order. */
  cursor?: string;
}

export interface AuditListing {
  /** Matching entries, oldest first. */
  entries: AuditEntry[];
  /** Keys of objects that are not entries (damaged), reported rather than failing the listing. */
  damaged: string[];
  /** How many entry names the time window holds (counted from the listing, not read; filters not applied). */
  total: number;
  /** The cursor of the next page (pass it as `cursor`), or null when every entry of the window was looked at. */
  next: string | null;
  /** Entry objects read (at most maxReads). */
  read: number;
}

/** Raised for a cursor that is not the name of an audit entry (a caller's input error: the page and CLI answer 400 / exit 1). */
export class AuditCursorError extends Error {
  constructor(cursor: string) {
    super(`the audit cursor ${JSON.stringify(cursor.slice(0, 80))} is not one a listing gave (.audit/YYYY-MM-DD/HHMMSSmmm-NONCE.json); start again without it`);
    this.name = 'AuditCursorError';
  }
}

/**
 * The audit entries matching `query`, oldest first in the result. Lists the
 * names of the window (with `since`: the date prefixes from that day to
 * today, one R2 list per day and per 1,000 names; otherwise everything under
 * `.audit/`), then reads entry objects in the listing's order — oldest first,
 * or newest first with `newest` — from just after `cursor`, up to 16 at a
 * time, and stops after `maxReads` objects (at most MAX_AUDIT_READS) or
 * `newest` matches: however many entries the window holds, one query reads a
 * bounded number of objects. `next` says where to go on. Throws
 * AuditCursorError for a cursor of another form, TypeError for a `since`
 * that is not a time, and what the store throws.
 */
export async function listAuditEntries(store: AuditStore, query: AuditQuery = {}): Promise<AuditListing> {
  const since = query.since === undefined ? null : new Date(query.since);
  if (since !== null && Number.isNaN(since.getTime())) throw new TypeError(`audit query: since "${String(query.since)}" is not a time`);
  if (query.cursor !== undefined && Number.isNaN(auditKeyTime(query.cursor))) throw new AuditCursorError(query.cursor);
  const now = query.now ?? new Date();
  const maxReads = Math.max(1, Math.min(query.maxReads ?? MAX_AUDIT_READS, MAX_AUDIT_READS));
  const newestFirst = query.newest !== undefined;
  // One list per day for recent windows; a long window lists everything once instead.
  const prefixes = since === null || now.getTime() - since.getTime() > 400 * 86_400_000 ? [auditPrefix] : dayPrefixes(since, now);
  const names: string[] = [];
  for (const prefix of prefixes) names.push(...(await listAllObjectKeys(store.blobs, prefix)));
  // A name of another form (NaN time) is kept: reading it reports it as damaged.
  const inWindow = names.filter((key) => since === null || !(auditKeyTime(key) < since.getTime())).sort();
  if (newestFirst) inWindow.reverse();
  const cursor = query.cursor;
  const start = cursor === undefined ? 0 : inWindow.findIndex((key) => (newestFirst ? key < cursor : key > cursor));
  const candidates = start < 0 ? [] : inWindow.slice(start);

  const namespace = query.namespace?.toLowerCase();
  const matches = (e: AuditEntry) =>
    (since === null || Date.parse(e.time) >= since.getTime()) &&
    (namespace === undefined || entryNamespaces(e).some((n) => n.toLowerCase() === namespace)) &&
    (query.outcome === undefined || e.outcome === query.outcome);
  const damaged: string[] = [];
  const entries: AuditEntry[] = [];
  let read = 0;
  while (read < candidates.length && read < maxReads && (query.newest === undefined || entries.length < query.newest)) {
    // Never more gets than could still be needed: a batch ends at the read budget and at the matches still wanted.
    const wanted = query.newest === undefined ? 16 : Math.min(16, query.newest - entries.length);
    const batch = candidates.slice(read, Math.min(read + wanted, maxReads, candidates.length));
    const texts = await Promise.all(batch.map(async (key) => (await store.blobs.get(key))?.text() ?? null)); // null: removed meanwhile
    for (let i = 0; i < batch.length; i++) {
      read++;
      const text = texts[i];
      if (text === null || text === undefined) continue;
      const entry = parseAuditEntry(text);
      if (entry === null) damaged.push(batch[i]!);
      else if (matches(entry)) entries.push(entry);
    }
  }
  entries.sort((a, b) => a.time.localeCompare(b.time));
  return { entries, damaged, total: inWindow.length, next: read > 0 && read < candidates.length ? candidates[read - 1]! : null, read };
}

/** The day prefixes from `since`'s UTC day to `now`'s, inclusive. */
function dayPrefixes(since: Date, now: Date): string[] {
  const prefixes: string[] = [];
  const day = new Date(Date.UTC(since.getUTCFullYear(), since.getUTCMonth(), since.getUTCDate()));
  while (day.getTime() <= now.getTime()) {
    prefixes.push(auditDayPrefix(day.toISOString().slice(0, 10)));
    day.setUTCDate(day.getUTCDate() + 1);
  }
  return prefixes;
}
