import type { IRequest } from 'itty-router';
import { isPrivate, settings } from '../config';
import type { Env } from '../env';
import { readSession, sameOrigin, type Session } from '../access/session';
import { listTokenRecords } from '../store/tokens/write';
import { type TokenPerson } from '../store/tokens/read';
import { listPersonTokens, markPersonRevoked, personKey, revokePersonToken, type PersonTokenEntry } from '../store/identity/person-tokens';
import { issuePersonToken } from '../access/issue';
import { recordTokenEvent } from '../access/audit';
import type { PersonSession } from '../access/person-session';
import { html, type Html } from './html';
import { layout, snippet } from './layout';
import { errorPage, htmlResponse, redirect } from './respond';
import { readFormAtMost } from '../http/body';
import { InputError } from '../protocol/errors';

/** The largest token form accepted (a name, the days, the scopes chosen; an id; a person's key): 413 beyond, while it streams. */
const MAX_FORM_BYTES = 16 * 1024;

/**
 * /tokens: people signed in with the identity provider mint read tokens for
 * CI (a subset of their own scopes, at most LOGIN_POLICY.token_days), see
 * and revoke their own; admins (LOGIN_POLICY.admins) see and revoke
 * everyone's and revoke all of a person's tokens at once (offboarding).
 * Every form is a same-origin POST (Origin checked, as /login), answers are
 * never cached, a new token is shown once and stored only as its hash.
 *   POST /tokens                 create
 *   POST /tokens/revoke          revoke one (id): own, or anyone's for an admin
 *   POST /tokens/revoke-person   admin: every token of a person (person key)
 */

type Person = Session & { person: PersonSession };

/**
 * The /tokens pages' guard (src/index.ts): a person signed in with single sign-on, put on the request as
 * `session`. Without OIDC_ISSUER: the page saying so; without a session: to the sign-in page; a session of a
 * read token (no person): 403.
 */
export async function signedInPerson(request: IRequest, env: Env): Promise<Response | undefined> {
  const url = new URL(request.url);
  if (settings(env).oidc === null)
    return errorPage(request, url.host, 'The Tokens page needs sign-in with an identity provider (OIDC_ISSUER), which this registry does not have.');
  const session = await readSession(request, env);
  if (session === null) return redirect(`${isPrivate(env) ? '/login' : '/login/sso'}?next=/tokens`);
  if (!session.person)
    return errorPage(request, url.host, 'Tokens are minted by people signed in with single sign-on. Sign out and use “Sign in with SSO”.', 403);
  request.session = session as Person;
  return undefined;
}

/** The token forms' guard (src/index.ts), before signedInPerson: a same-origin POST only (403 otherwise, as /login). */
export async function sameOriginTokenForm(request: IRequest, _env: Env): Promise<Response | undefined> {
  if (!sameOrigin(request)) return errorPage(request, new URL(request.url).host, 'Token changes must come from this site’s own forms.', 403);
  return undefined;
}

/** A request past signedInPerson. */
type PersonRequest = IRequest & { session: Person };

const tfTokenVariable = (host: string) => `TF_TOKEN_${host.replace(/\./g, '_').replace(/-/g, '__')}`;

function frame(request: Request, session: Person, body: Html, status = 200): Promise<Response> {
  const host = new URL(request.url).host;
  return htmlResponse(request, layout({ title: 'Tokens', hostname: host, session: { name: session.record.name }, crumbs: [['Providers', '/']], body }), {
    status,
    cacheControl: 'private, no-store',
  });
}

function tokenRows(tokens: { id: string; name: string; scopes: string[]; created: string; expires: string | null; owner?: string }[], admin: boolean): Html {
  if (tokens.length === 0) return html`<p class="muted">No tokens.</p>`;
  return html`<table class="tokens"><thead><tr><th scope="col">ID</th>${admin ? html`<th scope="col">Person</th>` : ''}<th scope="col">Name</th><th scope="col">Scopes</th><th scope="col">Created (UTC)</th><th scope="col">Expires (UTC)</th><th scope="col"><span class="visually-hidden">Revoke</span></th></tr></thead><tbody>
${tokens.map(
  (
    t,
  ) => html`<tr><td><code>${t.id}</code></td>${admin ? html`<td>${t.owner ?? '—'}</td>` : ''}<td>${t.name || '—'}</td><td>${t.scopes.join(', ')}</td><td>${t.created.slice(0, 16).replace('T', ' ')}</td><td>${t.expires ? t.expires.slice(0, 16).replace('T', ' ') : 'never'}</td>
<td><form class="inline" method="post" action="/tokens/revoke"><input type="hidden" name="id" value="${t.id}"><button class="quiet" type="submit" aria-label="Revoke token ${t.id}">Revoke</button></form></td></tr>`,
)}
</tbody></table>`;
}

async function render(request: Request, env: Env, session: Person, notice?: Html, status = 200): Promise<Response> {
  const me = session.person;
  const maxDays = settings(env).oidc?.policy?.tokenDays ?? 1;
  const own = await listPersonTokens(env.REGISTRY_R2, personKey(me.person));
  let adminSection: Html | string = '';
  if (me.admin) {
    const all = await listTokenRecords(env.REGISTRY_KV);
    const people = new Map<string, TokenPerson>();
    for (const record of all) if (record.person) people.set(personKey(record.person), record.person);
    adminSection = html`<section aria-labelledby="all-tokens"><h2 id="all-tokens">Everyone’s tokens (admin)</h2>
<p><a href="/audit">Audit log</a>: every write, sign-in and token change.</p>
${tokenRows(
  all.map((r) => ({ ...r, owner: r.person ? (r.person.email ?? r.person.subject) : 'operator (npm run token)' })),
  true,
)}
${
  people.size > 0
    ? html`<h3>Offboarding</h3><form method="post" action="/tokens/revoke-person"><label for="person">Revoke every token of</label>
<select id="person" name="person">${[...people].map(([key, p]) => html`<option value="${key}">${p.email ?? p.subject} (${p.issuer})</option>`)}</select>
<button type="submit">Revoke all</button></form>`
    : ''
}
</section>`;
  }
  const body = html`<h1>Tokens</h1>
${notice ?? ''}
<section aria-labelledby="create"><h2 id="create">Create a token</h2>
<p class="muted">For CI or another machine. It can read at most what you can: choose some of your scopes. It is shown once.</p>
<form method="post" action="/tokens" class="card">
<p><label for="name">Name</label><br><input id="name" name="name" maxlength="100" required placeholder="ci-network"></p>
<fieldset><legend>Scopes</legend>
${me.scopes.map((scope, i) => html`<label><input type="checkbox" name="scope" value="${scope}" id="scope-${i}" checked> <code>${scope}</code></label> `)}
</fieldset>
<p><label for="days">Expires after (days, at most ${maxDays})</label><br><input id="days" name="days" type="number" min="1" max="${maxDays}" value="${maxDays}" required></p>
<p><button type="submit">Create token</button></p>
</form></section>
<section aria-labelledby="yours"><h2 id="yours">Your tokens</h2>
${tokenRows(own, false)}
</section>
${adminSection}`;
  return frame(request, session, body, status);
}

/** GET /tokens, behind signedInPerson. */
export async function tokensPage(request: PersonRequest, env: Env): Promise<Response> {
  return render(request, env, request.session);
}

/** What a token form's action works on: the signed-in person, the form's fields, and how to refuse (400 with the page). */
interface TokenForm {
  request: IRequest;
  env: Env;
  session: Person;
  fields: FormData;
  host: string;
  refuse(message: string): Promise<Response>;
}

const TOKEN_ACTIONS = {
  '': createTokenAction,
  revoke: revokeTokenAction,
  'revoke-person': revokePersonAction,
} satisfies Record<string, (form: TokenForm) => Promise<Response>>;

/** POST /tokens, /tokens/revoke, /tokens/revoke-person, behind sameOriginTokenForm and signedInPerson (a refused input: 400 with the page and the reason). */
export async function tokensSubmit(request: PersonRequest, env: Env): Promise<Response> {
  const host = new URL(request.url).host;
  const session = request.session;
  let fields: FormData;
  try {
    fields = await readFormAtMost(request, MAX_FORM_BYTES);
  } catch (error) {
    const tooLarge = error instanceof InputError && error.status === 413;
    return render(
      request,
      env,
      session,
      html`<p class="error" role="alert">${tooLarge ? 'The form is too large.' : 'The form could not be read; try again.'}</p>`,
      tooLarge ? 413 : 400,
    );
  }
  const action: string = request.params?.action ?? '';
  if (!Object.hasOwn(TOKEN_ACTIONS, action)) return errorPage(request, host, 'Unknown token action.', 404);
  const refuse = (message: string) => render(request, env, session, html`<p class="error" role="alert">${message}</p>`, 400);
  return TOKEN_ACTIONS[action as keyof typeof TOKEN_ACTIONS]({ request, env, session, fields, host, refuse });
}

/** POST /tokens: a token of the person's own scopes, for 1 to the policy's tokenDays days, shown once. */
async function createTokenAction({ request, env, session, fields, host, refuse }: TokenForm): Promise<Response> {
  const me = session.person;
  const maxDays = settings(env).oidc?.policy?.tokenDays ?? 1;
  const scopes = fields.getAll('scope').map(String);
  const days = Number(fields.get('days'));
  const name = String(fields.get('name') ?? '').trim();
  if (scopes.length === 0) return refuse('Choose at least one scope.');
  const outside = scopes.filter((s) => !me.scopes.includes(s));
  if (outside.length > 0) return refuse(`You cannot grant scopes you do not have: ${outside.join(', ')}.`);
  if (!Number.isInteger(days) || days < 1 || days > maxDays) return refuse(`The expiry must be a whole number of days from 1 to ${maxDays}.`);
  if (name === '' || name.length > 100 || /[\u0000-\u001f\u007f]/.test(name)) return refuse('The name must be 1 to 100 printable characters.');
  const { token, record } = await issuePersonToken(env.REGISTRY_KV, env.REGISTRY_R2, { person: me.person, scopes: [...new Set(scopes)], days, name });
  await recordTokenEvent(env, me.person, 'token.create', { id: record.id, scopes: record.scopes, owner: me.person });
  const notice = html`<div class="card" role="status"><h2>Your new token “${name}”</h2>
<p><strong>Copy it now: it is shown only once.</strong> It expires ${record.expires!.slice(0, 10)} and reads ${record.scopes.join(', ')}.</p>
${snippet('new-token', 'Token', token)}
${snippet('new-token-credentials', 'CLI configuration (~/.terraformrc)', `credentials "${host}" {\n  token = "${token}"\n}`)}
${
  host.includes(':')
    ? html`<p class="muted">Terraform reads <code>TF_TOKEN_…</code> variables only for hostnames without a port: use the credentials block for ${host}.</p>`
    : snippet('new-token-env', 'Or an environment variable (CI)', `${tfTokenVariable(host)}=${token}`)
}
</div>`;
  return render(request, env, session, notice);
}

/** POST /tokens/revoke: one of the person's own tokens, or anyone's for an admin. */
async function revokeTokenAction({ request, env, session, fields, refuse }: TokenForm): Promise<Response> {
  const me = session.person;
  const id = String(fields.get('id') ?? '');
  if (!/^[0-9a-f]{12}$/.test(id)) return refuse('That is not a token id.');
  const own = (await listPersonTokens(env.REGISTRY_R2, personKey(me.person))).find((t: PersonTokenEntry) => t.id === id);
  let revoked: { sha256: string; owner: TokenPerson | undefined } | undefined = own ? { sha256: own.sha256, owner: me.person } : undefined;
  if (!revoked && me.admin) {
    const record = (await listTokenRecords(env.REGISTRY_KV)).find((r) => r.id === id);
    if (record) revoked = { sha256: record.sha256, owner: record.person };
  }
  if (!revoked) return refuse(`No token ${id} that you may revoke.`);
  await revokePersonToken(env.REGISTRY_KV, env.REGISTRY_R2, revoked.owner ? personKey(revoked.owner) : '-', revoked.sha256);
  await recordTokenEvent(env, me.person, 'token.revoke', { id, owner: revoked.owner });
  return render(
    request,
    env,
    session,
    html`<p class="notice" role="status">Token <code>${id}</code> is revoked: it is refused from now on here, and everywhere within a minute.</p>`,
  );
}

/** POST /tokens/revoke-person (admins only): every token of a person, and their page sessions. */
async function revokePersonAction({ request, env, session, fields, host, refuse }: TokenForm): Promise<Response> {
  const me = session.person;
  if (!me.admin) return errorPage(request, host, 'Only the registry’s admins may revoke another person’s tokens.', 403);
  const key = String(fields.get('person') ?? '');
  if (!/^[0-9a-f]{64}$/.test(key)) return refuse('That is not a person.');
  const theirs = (await listTokenRecords(env.REGISTRY_KV)).filter((r) => r.person && personKey(r.person) === key);
  const indexed = await listPersonTokens(env.REGISTRY_R2, key);
  const hashes = new Set([...theirs.map((r) => r.sha256), ...indexed.map((t) => t.sha256)]);
  for (const sha256 of hashes) await revokePersonToken(env.REGISTRY_KV, env.REGISTRY_R2, key, sha256);
  await markPersonRevoked(env.REGISTRY_R2, key);
  for (const record of theirs) await recordTokenEvent(env, me.person, 'token.revoke', { id: record.id, owner: record.person });
  return render(
    request,
    env,
    session,
    html`<p class="notice" role="status">Revoked ${hashes.size} token(s) of that person, and ended their page sessions.</p>`,
  );
}
