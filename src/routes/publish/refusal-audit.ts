import { settings } from '../../config';
import type { Env } from '../../env';
import type { Actor } from '../../store/audit/actor';
import type { AuditAction } from '../../store/audit/entry';

/**
 * Audit entries for refused publish credentials, in three classes counted apart:
 *   unverified  a CI ID token whose signature, issuer, audience or dates
 *               failed, so its claims are whatever the sender wrote;
 *   verified    a genuine CI ID token that matches no trusted publisher (any
 *               GitHub user can mint one for their own repository, choosing
 *               our audience) or that already started another publish;
 *   token       a token of this registry (`ert_…`) refused as expired, as a
 *               read token, or for another namespace: whoever holds one — a
 *               leaked expired token included — can send it without limit.
 * (An unknown or revoked `ert_` token names nobody and is not audited.)
 * Anyone can send these without limit; one R2 object each would let them
 * fill the audit log (and the R2 bill). So per isolate, class and window
 * (AUDIT_REFUSAL_WINDOW_SECONDS, default 60) the first REFUSALS_PER_WINDOW are
 * written one by one; the rest are only counted, and the first of those
 * schedules (ctx.waitUntil) a summary entry at the window's end or
 * SUMMARY_MAX_WAIT_MS later, whichever is first (waitUntil work is cut about
 * 30 s after the response): how many, from when to when, per target, reason
 * and issuer + subject, with the last one's actor. Bound with the defaults:
 * 10 + 3 entries a minute per class and isolate, 39 for the three (Cloudflare
 * runs many isolates: the bound multiplies by those an attacker reaches).
 * Successful writes are never limited, and the /audit page filters to them
 * (?outcome=ok).
 */

export const REFUSALS_PER_WINDOW = 10;
/** The name the forged-token tests know the limit by. */
export const UNVERIFIED_PER_WINDOW = REFUSALS_PER_WINDOW;
export type RefusalClass = 'unverified' | 'verified' | 'token';
/** The longest a summary waits in waitUntil (Cloudflare allows about 30 s after the response). */
const SUMMARY_MAX_WAIT_MS = 20_000;
const DEFAULT_WINDOW_SECONDS = 60;

export interface RefusalEntry {
  action: AuditAction;
  target: string;
  actor: Actor;
  reason: string;
}

interface Window {
  start: number;
  written: number;
  suppressed: number;
  first: number;
  last: number;
  byTarget: Map<string, number>;
  byReason: Map<string, number>;
  /** Per `issuer subject` the CI tokens named (claimed, for the unverified class), per `token ID (name)` the registry's tokens. */
  byActor: Map<string, number>;
  lastEntry: RefusalEntry | null;
}

const windows = new Map<RefusalClass, Window>();

/** The window in ms: AUDIT_REFUSAL_WINDOW_SECONDS when a number in (0, 3600], else 60 s. */
function refusalWindowMs(env: Env): number {
  return settings(env).auditRefusalWindowMs ?? DEFAULT_WINDOW_SECONDS * 1000;
}

/**
 * Records one refused publish credential of `kind`: calls `write` with its
 * entry when the class's window has room, else counts it and makes sure a
 * summary is written (through `write`, in ctx.waitUntil) when the window
 * ends. `write` must not throw (the caller's audit() logs failures).
 */
export async function auditRefusal(
  env: Env,
  ctx: ExecutionContext,
  kind: RefusalClass,
  entry: RefusalEntry,
  write: (entry: RefusalEntry) => Promise<void>,
  now = Date.now(),
): Promise<void> {
  const windowMs = refusalWindowMs(env);
  let current = windows.get(kind);
  if (current === undefined || now - current.start >= windowMs) {
    current = { start: now, written: 0, suppressed: 0, first: now, last: now, byTarget: new Map(), byReason: new Map(), byActor: new Map(), lastEntry: null };
    windows.set(kind, current);
  }
  if (current.written < REFUSALS_PER_WINDOW) {
    current.written++;
    await write(entry);
    return;
  }
  const w = current;
  // The first refusal counted since the last summary schedules the next one.
  const summaryScheduled = w.suppressed > 0;
  if (!summaryScheduled) w.first = now;
  w.suppressed++;
  w.last = now;
  w.byTarget.set(entry.target, (w.byTarget.get(entry.target) ?? 0) + 1);
  const reason = entry.reason.slice(0, 160);
  w.byReason.set(reason, (w.byReason.get(reason) ?? 0) + 1);
  const who = (
    entry.actor.kind === 'ci'
      ? `${entry.actor.issuer} ${entry.actor.subject}`
      : entry.actor.kind === 'token'
        ? `token ${entry.actor.tokenId} (${entry.actor.name})`
        : entry.actor.kind
  ).slice(0, 200);
  w.byActor.set(who, (w.byActor.get(who) ?? 0) + 1);
  w.lastEntry = entry;
  if (summaryScheduled) return;
  // waitUntil work gets about 30 s after the response on Cloudflare: a summary waits at most SUMMARY_MAX_WAIT_MS.
  const wait = Math.min(SUMMARY_MAX_WAIT_MS, Math.max(0, w.start + windowMs - now));
  ctx.waitUntil(
    new Promise((resolve) => setTimeout(resolve, wait)).then(() => {
      const entry = summary(w, kind);
      // What is counted from now on goes into the next summary (same window) or the next window.
      w.suppressed = 0;
      w.byTarget = new Map();
      w.byReason = new Map();
      w.byActor = new Map();
      return write(entry);
    }),
  );
}

const CLASS_NAMES: Record<RefusalClass, string> = {
  unverified: 'unverified CI ID tokens',
  verified: 'genuine CI ID tokens no trusted publisher allows',
  token: 'tokens of this registry (expired, read tokens, other namespaces)',
};

/** The summary entry of a window's counted refusals. */
function summary(w: Window, kind: RefusalClass): RefusalEntry {
  const top = (counts: Map<string, number>) =>
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([k, n]) => `${k} ×${n}`)
      .join('; ');
  const targets = [...w.byTarget].sort((a, b) => b[1] - a[1]);
  const last = w.lastEntry!;
  return {
    action: last.action,
    target: targets[0]![0],
    actor: last.actor,
    reason:
      `${w.suppressed} more refusals of ${CLASS_NAMES[kind]} ` +
      `between ${new Date(w.first).toISOString()} and ${new Date(w.last).toISOString()}, ` +
      `counted here rather than logged one by one (at most ${REFUSALS_PER_WINDOW} are, per window and isolate). ` +
      `Targets: ${top(w.byTarget)}. Reasons: ${top(w.byReason)}. ${kind === 'token' ? 'Tokens' : 'Issuer and subject'}: ${top(w.byActor)}. ` +
      `Actor: ${kind === 'unverified' ? 'what the last token claimed (unverified)' : "the last token's"}.`,
  };
}
