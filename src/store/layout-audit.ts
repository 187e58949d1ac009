/** The audit log's object names: part of the storage layout (layout.ts exports them with every other name). */

// ---- Audit log (src/store/audit/) ----
// R2 only: one object per entry, created with If-None-Match: * and never rewritten; a date prefix per UTC
// day so `audit --since 7d` lists seven prefixes, and names sort by time within a day.

/** Prefix of every audit entry. */
export const auditPrefix = '.audit/';

/** Prefix of the audit entries of one UTC day ("2026-11-23"). */
export const auditDayPrefix = (day: string) => `${auditPrefix}${day}/`;

/** R2 object of one audit entry written at `time` (ISO 8601, UTC); `nonce` makes entries of the same millisecond distinct. */
export function auditEntryKey(time: string, nonce: string): string {
  const day = time.slice(0, 10);
  const clock = time.slice(11, 23).replace(/[:.]/g, ''); // HHMMSSmmm
  return `${auditDayPrefix(day)}${clock}-${nonce}.json`;
}

/** The time (ms) auditEntryKey encoded in `key`; NaN for a name not of that form. */
export function auditKeyTime(key: string): number {
  const match = /^\.audit\/(\d{4}-\d{2}-\d{2})\/(\d{2})(\d{2})(\d{2})(\d{3})-[^/]*$/.exec(key);
  return match ? Date.parse(`${match[1]}T${match[2]}:${match[3]}:${match[4]}.${match[5]}Z`) : Number.NaN;
}
