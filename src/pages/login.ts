import type { IRequest } from 'itty-router';
import { isPrivate, settings } from '../config';
import type { Env } from '../env';
import { readSession, sameOrigin, signIn, signOut } from '../access/session';
import { html } from './html';
import { layout } from './layout';
import { errorPage, htmlResponse, redirect } from './respond';
import { readFormAtMost } from '../http/body';
import { InputError } from '../protocol/errors';

/**
 * Sign-in for the pages of a private registry: GET /login shows the form,
 * POST /login (same-origin only) checks the read token and sets the session
 * cookie, POST /logout (same-origin only) ends the session on the server and
 * clears the cookie. In public mode /login
 * is a 404: there is nothing to sign in to.
 */

/** Where to go after signing in: a path on this site only (never //host or a scheme), else "/". */
export function safeNext(next: string | null): string {
  return next && /^\/(?![/\\])[^\s]*$/.test(next) ? next : '/';
}

function form(request: Request, next: string, error?: string, status = 200, env?: Env): Promise<Response> {
  const host = new URL(request.url).host;
  // With an identity provider configured (src/access/), single sign-on first; the token form stays for CI tokens.
  const sso =
    env && settings(env).oidc
      ? html`<p><a class="button" href="/login/sso?next=${encodeURIComponent(next)}">Sign in with SSO</a></p><p class="muted">Or with a read token:</p>`
      : '';
  const body = html`<div class="login card">
<h1>Sign in</h1>
<p class="muted">This registry is private. Sign in with a read token; you will see the namespaces it can read.</p>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
${sso}
<form method="post" action="/login">
<input type="hidden" name="next" value="${next}">
<label for="token">Read token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required placeholder="ert_…" spellcheck="false">
<button type="submit">Sign in</button>
</form>
<p class="muted">No token? An administrator creates one with <code>npm run token -- create --namespace NAME</code>.</p>
</div>`;
  return htmlResponse(request, layout({ title: 'Sign in', hostname: host, body }), { status, cacheControl: 'no-store' });
}

/** GET /login */
export async function loginPage(request: IRequest, env: Env): Promise<Response> {
  const url = new URL(request.url);
  if (!isPrivate(env)) return errorPage(request, url.host, 'This registry is public: there is nothing to sign in to.');
  const next = safeNext(url.searchParams.get('next'));
  if (await readSession(request, env)) return redirect(next);
  return form(request, next, undefined, 200, env);
}

/** A token and a `next` path fit in far less; a larger form is refused while it streams (413, src/http/body.ts). */
const MAX_FORM_BYTES = 8192;

/** POST /login — 303 to `next` with the session cookie; 401 with the form again for a refused token; 403 cross-origin; 413 for a form over 8 KiB. */
export async function loginSubmit(request: IRequest, env: Env): Promise<Response> {
  const url = new URL(request.url);
  if (!isPrivate(env)) return errorPage(request, url.host, 'This registry is public: there is nothing to sign in to.');
  if (!sameOrigin(request)) return errorPage(request, url.host, 'Sign-in must come from this site’s own form.', 403);
  let fields: FormData;
  try {
    fields = await readFormAtMost(request, MAX_FORM_BYTES);
  } catch (error) {
    if (error instanceof InputError && error.status === 413) return form(request, '/', 'The form is too large to be a sign-in.', 413, env);
    return form(request, '/', 'The form could not be read; try again.', 400, env);
  }
  const next = safeNext(String(fields.get('next') ?? '/'));
  const token = String(fields.get('token') ?? '');
  const outcome = await signIn(token, env);
  if ('error' in outcome) return form(request, next, `Not signed in: ${outcome.error}.`, 401, env);
  return redirect(next, { 'set-cookie': outcome.cookie });
}

/** POST /logout — ends the session on the server (a copy of the cookie stops working too) and in the browser, and goes to /login; 403 cross-origin. */
export async function logout(request: IRequest, env: Env): Promise<Response> {
  if (!sameOrigin(request)) return errorPage(request, new URL(request.url).host, 'Sign-out must come from this site’s own form.', 403);
  return redirect('/login', { 'set-cookie': await signOut(request, env) });
}
