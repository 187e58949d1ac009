import { operatorActor, type Actor } from '../../src/store/audit/actor';
import { displayEntry } from '../../src/store/audit/display';
import { InputError } from '../../src/protocol/errors';
import { isUserFixable } from './cli';
import { appendAuditEntry, type AuditStore } from '../../src/store/audit/write';
import type { AuditEntry } from '../../src/store/audit/entry';

/**
 * The audit log from the command line: how the write commands record what
 * they did (actor `operator`, local or --remote), and what `npm run audit`
 * parses and prints. Storage is src/store/audit/.
 */

export type AuditRecord = Omit<AuditEntry, 'time' | 'actor'> & { actor?: Actor };

/**
 * Appends an audit entry for a CLI write (actor: the operator, `remote`
 * telling local from --remote, unless `record.actor` says otherwise). Throws
 * an Error saying the write itself is done when the entry cannot be
 * written (an infrastructure failure: exit 3, and a re-run is safe).
 */
export async function recordAudit(store: AuditStore, remote: boolean | undefined, record: AuditRecord): Promise<void> {
  try {
    await appendAuditEntry(store, { ...record, actor: record.actor ?? operatorActor(remote) });
  } catch (error) {
    throw new Error(`${record.action} ${record.target} is done (${record.outcome}), but its audit entry could not be written: ${(error as Error).message}`);
  }
}

/**
 * Runs `write` and records its outcome: `outcomeOf(result)` for a result
 * (which may also name the target more precisely; null: record nothing),
 * `refused` with the message for an error the user can fix (isUserFixable:
 * InputError, a StoreRefusal), `failed` for anything else; rethrows errors
 * after recording.
 * A failure to record a failure is ignored (the original error matters).
 * With `store` null (a dry run) it only runs `write`: a dry run writes nothing, not even an entry.
 */
export async function audited<T>(
  store: AuditStore | null,
  remote: boolean | undefined,
  record: Omit<AuditRecord, 'outcome'>,
  write: () => Promise<T>,
  outcomeOf: (result: T) => (Pick<AuditEntry, 'outcome'> & Partial<Pick<AuditEntry, 'digests' | 'reason' | 'target' | 'namespaces'>>) | null,
): Promise<T> {
  if (store === null) return write();
  let result: T;
  try {
    result = await write();
  } catch (error) {
    const refused = isUserFixable(error);
    await recordAudit(store, remote, { ...record, outcome: refused ? 'refused' : 'failed', reason: (error as Error)?.message ?? String(error) }).catch(
      () => {},
    );
    throw error;
  }
  const outcome = outcomeOf(result);
  if (outcome) await recordAudit(store, remote, { ...record, ...outcome });
  return result;
}

const UNIT_MS = { m: 60_000, h: 3600_000, d: 86_400_000, w: 7 * 86_400_000 } as const;

/**
 * Parses `--since`: a duration back from `now` ("30m", "12h", "7d", "4w") or
 * an ISO date/time ("2026-11-01", "2026-11-01T12:00:00Z"). Throws InputError
 * for anything else.
 */
export function parseSince(raw: string, now = Date.now()): Date {
  const text = raw.trim();
  const duration = /^(\d{1,6})([mhdw])$/.exec(text);
  if (duration) return new Date(now - Number(duration[1]) * UNIT_MS[duration[2] as keyof typeof UNIT_MS]);
  if (/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) {
    const at = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
    if (Number.isFinite(at)) return new Date(at);
  }
  throw new InputError(`--since "${raw}": use a duration like 30m, 12h, 7d, 4w or a date like 2026-11-01`);
}

/**
 * The human listing: one line per entry, oldest first (no secrets: entries
 * never hold one), every field through displayEntry (control characters
 * escaped: nothing an entry holds reaches the terminal as an escape sequence).
 */
export function formatAuditLines(entries: readonly AuditEntry[]): string {
  if (entries.length === 0) return 'no audit entries';
  return entries
    .map((entry) => {
      const e = displayEntry(entry);
      return `${e.time}  ${e.outcome.padEnd(9)}  ${e.action.padEnd(16)}  ${e.target}  by ${e.actor}${e.reason ? ` — ${e.reason}` : ''}`;
    })
    .join('\n');
}
