import { mapLimit } from '../../concurrency';
import { auditDayPrefix, auditKeyTime, auditPrefix } from '../layout';
import { listAllObjectKeys } from '../list';
import { entryNamespaces, parseAuditEntry, type AuditEntry, type AuditOutcome } from './entry';
import type { AuditStore } from './write';

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
   * Read only the newest N matching entries (a page showing the latest):
   * entry names sort by time, so the rest are counted from the listing, not
   * read. Ignored with `namespace` or `outcome`, which need every entry's content.
   */
  newest?: number;
}

export interface AuditListing {
  /** Matching entries, oldest first. */
  entries: AuditEntry[];
  /** Keys of objects that are not entries (damaged), reported rather than failing the listing. */
  damaged: string[];
  /** How many entries match: entries.length, or with `newest` every matching name (damaged ones unread among them). */
  total: number;
}

/**
 * The audit entries matching `query`, oldest first. With `since`, lists
 * only the date prefixes from that day to today (one R2 list per day);
 * otherwise everything under `.audit/`. Reads up to 16 entries at a time.
 * Throws only what the store throws.
 */
export async function listAuditEntries(store: AuditStore, query: AuditQuery = {}): Promise<AuditListing> {
  const since = query.since === undefined ? null : new Date(query.since);
  if (since !== null && Number.isNaN(since.getTime())) throw new TypeError(`audit query: since "${String(query.since)}" is not a time`);
  const now = query.now ?? new Date();
  // One list per day for recent windows; a long window lists everything once instead.
  const prefixes = since === null || now.getTime() - since.getTime() > 400 * 86_400_000 ? [auditPrefix] : dayPrefixes(since, now);
  let keys = (await mapLimit(prefixes, 4, (prefix) => listAllObjectKeys(store.blobs, prefix))).flat();
  const onlyNewest = query.newest !== undefined && query.namespace === undefined && query.outcome === undefined;
  let total = 0;
  if (onlyNewest) {
    keys = keys.filter((key) => since === null || !(auditKeyTime(key) < since.getTime())).sort(); // a name of another form is kept
    total = keys.length;
    keys = keys.slice(-query.newest!);
  }
  const damaged: string[] = [];
  const read = await mapLimit(keys, 16, async (key) => {
    const object = await store.blobs.get(key);
    if (object === null) return null; // removed by an operator meanwhile
    const entry = parseAuditEntry(await object.text());
    if (entry === null) damaged.push(key);
    return entry;
  });
  const namespace = query.namespace?.toLowerCase();
  const entries = read
    .filter((e): e is AuditEntry => e !== null)
    .filter((e) => since === null || Date.parse(e.time) >= since.getTime())
    .filter((e) => namespace === undefined || entryNamespaces(e).some((n) => n.toLowerCase() === namespace))
    .filter((e) => query.outcome === undefined || e.outcome === query.outcome)
    .sort((a, b) => a.time.localeCompare(b.time));
  return { entries, damaged, total: onlyNewest ? total : entries.length };
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
