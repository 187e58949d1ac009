import { parseJsonObjectOrNull } from '../../protocol/shape';
import { parseActor, type Actor } from './actor';

/**
 * One audit entry: who did what to which thing, and how it ended. Written
 * by appendAuditEntry (write.ts) for every write by any path — the CLI
 * (actor `operator`), the write API (a publish token or a CI identity),
 * pages (a signed-in person) — and listed by listAuditEntries (read.ts).
 *
 * `target` names the thing in the form its command line does:
 *   HOST/NS/TYPE VERSION            a provider version (provider.publish, lifecycle.*)
 *   HOST/NS/NAME/SYSTEM VERSION     a module version (module.publish)
 *   HOST/NS                         a namespace (key.add, key.remove, publisher.add)
 *   HOST/NS/TYPE                    a mirrored provider (mirror.sync, mirror.pull)
 *   token ID                        a token (token.create, token.revoke)
 * The namespaces an entry concerns are `namespaces` when given, else the
 * second path segment of `target` (what `audit --namespace` filters on).
 */
export interface AuditEntry {
  /** ISO 8601 UTC time of the write (filled in by appendAuditEntry when absent). */
  time: string;
  actor: Actor;
  /** `domain.verb`: provider.publish, module.publish, key.add, key.remove, token.create, token.revoke, publisher.add, mirror.sync, … */
  action: AuditAction;
  target: string;
  /** ok: written; unchanged: nothing to write (already so); refused: not allowed or invalid, nothing written; failed: an infrastructure failure. */
  outcome: AuditOutcome;
  /** Why it was refused or failed, or a short note (never a secret). */
  reason?: string;
  /** Hex SHA-256 of what was written, by file name (archives, SHA256SUMS, signature, module package). */
  digests?: Record<string, string>;
  /** The namespaces concerned when `target` does not name one (a token's scopes). */
  namespaces?: string[];
}

export type AuditOutcome = 'ok' | 'unchanged' | 'refused' | 'failed';

/** Known actions, plus any other `domain.verb` a later feature adds. */
export type AuditAction =
  | 'provider.publish'
  | 'module.publish'
  | 'key.add'
  | 'key.remove'
  | 'token.create'
  | 'token.revoke'
  | 'publisher.add'
  | 'publisher.remove'
  | 'mirror.sync'
  | 'mirror.import'
  | 'mirror.pull'
  | 'lifecycle.deprecate'
  | 'lifecycle.yank'
  | (string & {});

const OUTCOMES: readonly string[] = ['ok', 'unchanged', 'refused', 'failed'];
const ACTION = /^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$/;
// Printable text only: an entry is shown in terminals and pages.
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Checks an entry before it is written. Throws TypeError naming the field
 * for a malformed one (a programming error of the caller, not user input).
 */
export function validateAuditEntry(entry: AuditEntry): void {
  if (Number.isNaN(Date.parse(entry.time)) || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/.test(entry.time)) {
    throw new TypeError(`audit entry: time "${entry.time}" is not an ISO 8601 UTC time`);
  }
  if (parseActor(entry.actor) === null) throw new TypeError(`audit entry: actor ${JSON.stringify(entry.actor)} is not an Actor`);
  if (!ACTION.test(entry.action)) throw new TypeError(`audit entry: action "${entry.action}" is not domain.verb`);
  if (typeof entry.target !== 'string' || entry.target === '' || entry.target.length > 512 || CONTROL.test(entry.target)) {
    throw new TypeError('audit entry: target must be 1-512 printable characters');
  }
  if (!OUTCOMES.includes(entry.outcome)) throw new TypeError(`audit entry: outcome "${entry.outcome}" is not one of ${OUTCOMES.join(', ')}`);
}

/** The namespaces an entry concerns (see AuditEntry). */
export function entryNamespaces(entry: Pick<AuditEntry, 'target' | 'namespaces'>): string[] {
  if (entry.namespaces?.length) return entry.namespaces;
  const path = entry.target.split(' ')[0]!.split('/');
  return path.length >= 2 && path[1] ? [path[1]] : [];
}

/**
 * Parses a stored entry. Returns null (never throws) for text that is not an
 * entry, so one damaged object does not hide the others.
 */
export function parseAuditEntry(text: string): AuditEntry | null {
  const e = parseJsonObjectOrNull(text);
  if (e === null) return null;
  const actor = parseActor(e.actor);
  if (actor === null || typeof e.time !== 'string' || typeof e.action !== 'string' || typeof e.target !== 'string') return null;
  if (typeof e.outcome !== 'string' || !OUTCOMES.includes(e.outcome)) return null;
  if (e.reason !== undefined && typeof e.reason !== 'string') return null;
  if (e.digests !== undefined && (typeof e.digests !== 'object' || e.digests === null || !Object.values(e.digests).every((d) => typeof d === 'string')))
    return null;
  if (e.namespaces !== undefined && (!Array.isArray(e.namespaces) || !e.namespaces.every((n) => typeof n === 'string'))) return null;
  return {
    time: e.time,
    actor,
    action: e.action,
    target: e.target,
    outcome: e.outcome as AuditOutcome,
    ...(e.reason !== undefined ? { reason: e.reason as string } : {}),
    ...(e.digests !== undefined ? { digests: e.digests as Record<string, string> } : {}),
    ...(e.namespaces !== undefined ? { namespaces: e.namespaces as string[] } : {}),
  };
}
