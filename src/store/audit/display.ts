import { describeActor } from './actor';
import type { AuditEntry } from './entry';

/**
 * How an audit entry is shown — by `npm run audit` in a terminal and by the
 * /audit page — one function for both. An entry holds text that others
 * chose (a refused CI token's claims, a reason quoting input, a damaged
 * object's name): shown raw, an escape sequence would drive the reader's
 * terminal (clear it, rewrite earlier lines, set its title) and a bidi
 * control would reorder what a page shows.
 */

// C0 and C1 controls, DEL, the line and paragraph separators, and the bidi embedding, override and isolate controls.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every control character (see UNPRINTABLE) written as its
 * escape: `\x1b` up to U+00FF, `\u202e` above. Other text is unchanged.
 * Never throws. The one escaping function for printing or showing the audit.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** The fields of an entry as shown, each through printable(); `reason` cut to `maxReason` characters (… added). */
export function displayEntry(entry: AuditEntry, maxReason = Number.POSITIVE_INFINITY) {
  const reason = entry.reason === undefined ? '' : entry.reason.length > maxReason ? `${entry.reason.slice(0, maxReason)}…` : entry.reason;
  return {
    time: printable(entry.time.slice(0, 19).replace('T', ' ')),
    action: printable(entry.action),
    target: printable(entry.target),
    outcome: printable(entry.outcome),
    actor: printable(describeActor(entry.actor)),
    reason: printable(reason),
  };
}
