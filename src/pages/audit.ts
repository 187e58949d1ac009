import type { IRequest } from 'itty-router';
import { isPrivate } from '../config';
import type { Env } from '../env';
import { readSession, type Session } from '../access/session';
import { displayEntry, printable } from '../store/audit/display';
import { parseProviderName } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { AuditCursorError, listAuditEntries } from '../store/audit/read';
import type { AuditEntry, AuditOutcome } from '../store/audit/entry';
import { html } from './html';
import { layout } from './layout';
import { errorPage, htmlResponse, redirect } from './respond';

/**
 * GET /audit[?days=N][&namespace=NS][&outcome=ok|unchanged|refused|failed][&before=CURSOR] — the audit log
 * (src/store/audit/) for admins: people signed in with single sign-on whom
 * LOGIN_POLICY makes admins. Read-only, newest first, the last `days` days
 * (1–31, default 7), at most MAX_SHOWN entries per page; `outcome=ok` shows
 * only the writes that happened, so a flood of refusals never hides them
 * (refusals of CI tokens are rate-limited too: refusal-audit.ts). A request
 * reads at most MAX_READS entry objects however many the window holds; when
 * it stops before the window's end, an "Older entries" link carries the
 * cursor (`before`) to go on. Entries never hold a secret (tokens appear by
 * their public id); every field goes through printable() (control characters
 * escaped) and is HTML-escaped, under the pages' CSP, never cached. Without a
 * session: to the sign-in page; signed in but not an admin: 403; a malformed
 * parameter: 400 naming it. Cost: one R2 list per day of the window (and per
 * 1,000 names), at most MAX_READS R2 gets.
 */

const MAX_SHOWN = 200;
/** Entry objects one request reads at most (with a filter, most of them may not match). */
export const MAX_READS = 500;
const OUTCOMES: readonly AuditOutcome[] = ['ok', 'unchanged', 'refused', 'failed'];

/**
 * The audit page's guard (src/index.ts): an admin's session (a person LOGIN_POLICY makes an admin), put on the
 * request as `session`. Without a session: to the sign-in page; signed in but not an admin: 403.
 */
export async function adminOnly(request: IRequest, env: Env): Promise<Response | undefined> {
  const session = await readSession(request, env);
  if (session === null) return redirect(`${isPrivate(env) ? '/login' : '/login/sso'}?next=/audit`);
  if (!session.person?.admin)
    return errorPage(request, new URL(request.url).host, 'The audit log is for admins (LOGIN_POLICY.admins), signed in with single sign-on.', 403);
  request.session = session;
  return undefined;
}

/** GET /audit, behind adminOnly. */
export async function auditPage(request: IRequest & { session: Session }, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const session = request.session;
  let days: number;
  let namespace: string | undefined;
  let outcome: AuditOutcome | undefined;
  try {
    const rawDays = url.searchParams.get('days');
    days = rawDays === null ? 7 : Number(rawDays);
    if (!Number.isInteger(days) || days < 1 || days > 31) throw new InputError(`days must be a whole number from 1 to 31, not "${rawDays}"`);
    const rawNamespace = url.searchParams.get('namespace');
    namespace = rawNamespace === null || rawNamespace === '' ? undefined : parseProviderName(rawNamespace, 'namespace');
    const rawOutcome = url.searchParams.get('outcome');
    if (rawOutcome !== null && rawOutcome !== '' && !OUTCOMES.includes(rawOutcome as AuditOutcome))
      throw new InputError(`outcome must be one of ${OUTCOMES.join(', ')}, not "${rawOutcome}"`);
    outcome = rawOutcome === null || rawOutcome === '' ? undefined : (rawOutcome as AuditOutcome);
  } catch (error) {
    if (error instanceof InputError) return errorPage(request, url.host, error.message, 400);
    throw error;
  }
  const before = url.searchParams.get('before') || undefined;
  const since = new Date(Date.now() - days * 86_400_000);
  let listing: Awaited<ReturnType<typeof listAuditEntries>>;
  try {
    listing = await listAuditEntries(
      { blobs: env.REGISTRY_R2 as never },
      {
        since,
        newest: MAX_SHOWN,
        maxReads: MAX_READS,
        ...(before ? { cursor: before } : {}),
        ...(namespace ? { namespace } : {}),
        ...(outcome ? { outcome } : {}),
      },
    );
  } catch (error) {
    if (error instanceof AuditCursorError) return errorPage(request, url.host, `before: ${error.message}`, 400);
    throw error;
  }
  const { entries, damaged, total, next } = listing;
  const shown = entries.slice().reverse();
  const older =
    next === null
      ? null
      : `/audit?${new URLSearchParams({ days: String(days), ...(namespace ? { namespace } : {}), ...(outcome ? { outcome } : {}), before: next })}`;
  const body = html`<h1>Audit log</h1>
<form method="get" action="/audit" class="inline"><label for="days">Last</label> <input id="days" name="days" type="number" min="1" max="31" value="${String(days)}"> days
<label for="namespace">namespace</label> <input id="namespace" name="namespace" value="${namespace ?? ''}" placeholder="any">
<label for="outcome">outcome</label> <select id="outcome" name="outcome"><option value="">any</option>${OUTCOMES.map((o) => html`<option value="${o}"${o === outcome ? html` selected` : ''}>${o}</option>`)}</select> <button type="submit">Show</button></form>
<p class="muted">${String(total)} entr${total === 1 ? 'y' : 'ies'} since ${since.toISOString().slice(0, 16).replace('T', ' ')} UTC${before ? ', older than the previous page' : ''}${namespace || outcome ? `; ${shown.length} matching shown` : total > shown.length ? `; ${shown.length} shown` : ''}${damaged.length ? `; ${damaged.length} damaged object(s) under .audit/ skipped: ${damaged.map(printable).join(', ')}` : ''}.</p>
${
  shown.length === 0
    ? html`<p>No entries.</p>`
    : html`<table class="tokens audit"><thead><tr><th scope="col">Time (UTC)</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Outcome</th><th scope="col">Actor</th><th scope="col">Reason</th></tr></thead><tbody>
${shown.map(row)}
</tbody></table>`
}${older ? html`<p><a href="${older}" rel="next">Older entries</a></p>` : ''}`;
  return htmlResponse(request, layout({ title: 'Audit log', hostname: url.host, session: { name: session.record.name }, crumbs: [['Providers', '/']], body }), {
    cacheControl: 'private, no-store',
  });
}

function row(entry: AuditEntry) {
  const e = displayEntry(entry, 300);
  return html`<tr><td>${e.time}</td><td><code>${e.action}</code></td><td>${e.target}</td><td>${e.outcome}</td><td>${e.actor}</td><td>${e.reason}</td></tr>`;
}
