import type { IRequest } from 'itty-router';
import { isPrivate } from '../config';
import type { Env } from '../env';
import { readSession } from '../access/session';
import { describeActor } from '../store/audit/actor';
import { parseProviderName } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { listAuditEntries } from '../store/audit/read';
import type { AuditEntry, AuditOutcome } from '../store/audit/entry';
import { html } from './html';
import { layout } from './layout';
import { errorPage, htmlResponse, redirect } from './respond';

/**
 * GET /audit[?days=N][&namespace=NS][&outcome=ok|unchanged|refused|failed] — the audit log (src/store/audit/) for
 * admins: people signed in with single sign-on whom LOGIN_POLICY makes
 * admins. Read-only, newest first, the last `days` days (1–31, default 7),
 * at most MAX_SHOWN entries (`npm run audit` lists everything); `outcome=ok`
 * shows only the writes that happened, so a flood of refusals never hides
 * them (refusals of CI tokens are rate-limited too: refusal-audit.ts). Entries
 * never hold a secret (tokens appear by their public id); everything is
 * HTML-escaped, under the pages' CSP, never cached. Without a session: to
 * the sign-in page; signed in but not an admin: 403. Cost: one R2 list per
 * day and one R2 get per entry in the window.
 */

const MAX_SHOWN = 200;
const OUTCOMES: readonly AuditOutcome[] = ['ok', 'unchanged', 'refused', 'failed'];

export async function auditPage(request: IRequest, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const session = await readSession(request, env);
  if (session === null) return redirect(`${isPrivate(env) ? '/login' : '/login/sso'}?next=/audit`);
  if (!session.person?.admin) return errorPage(request, url.host, 'The audit log is for admins (LOGIN_POLICY.admins), signed in with single sign-on.', 403);
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
  const since = new Date(Date.now() - days * 86_400_000);
  // Without a namespace filter only the entries shown are read (the rest are counted from their names).
  const { entries, damaged, total } = await listAuditEntries(
    { blobs: env.REGISTRY_R2 as never },
    { since, newest: MAX_SHOWN, ...(namespace ? { namespace } : {}), ...(outcome ? { outcome } : {}) },
  );
  const shown = entries.slice(-MAX_SHOWN).reverse();
  const body = html`<h1>Audit log</h1>
<form method="get" action="/audit" class="inline"><label for="days">Last</label> <input id="days" name="days" type="number" min="1" max="31" value="${String(days)}"> days
<label for="namespace">namespace</label> <input id="namespace" name="namespace" value="${namespace ?? ''}" placeholder="any">
<label for="outcome">outcome</label> <select id="outcome" name="outcome"><option value="">any</option>${OUTCOMES.map((o) => html`<option value="${o}"${o === outcome ? html` selected` : ''}>${o}</option>`)}</select> <button type="submit">Show</button></form>
<p class="muted">${String(total)} entr${total === 1 ? 'y' : 'ies'} since ${since.toISOString().slice(0, 16).replace('T', ' ')} UTC${total > shown.length ? `, the newest ${shown.length} shown (npm run audit lists all)` : ''}${damaged.length ? `; ${damaged.length} damaged object(s) under .audit/ skipped` : ''}.</p>
${
  shown.length === 0
    ? html`<p>No entries.</p>`
    : html`<table class="tokens audit"><thead><tr><th scope="col">Time (UTC)</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Outcome</th><th scope="col">Actor</th><th scope="col">Reason</th></tr></thead><tbody>
${shown.map(row)}
</tbody></table>`
}`;
  return htmlResponse(request, layout({ title: 'Audit log', hostname: url.host, session: { name: session.record.name }, crumbs: [['Providers', '/']], body }), {
    cacheControl: 'private, no-store',
  });
}

function row(entry: AuditEntry) {
  const reason = entry.reason === undefined ? '' : entry.reason.length > 300 ? `${entry.reason.slice(0, 300)}…` : entry.reason;
  return html`<tr><td>${entry.time.slice(0, 19).replace('T', ' ')}</td><td><code>${entry.action}</code></td><td>${entry.target}</td><td>${entry.outcome}</td><td>${describeActor(entry.actor)}</td><td>${reason}</td></tr>`;
}
