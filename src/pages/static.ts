import type { IRequest } from 'itty-router';
import { notFound } from '../http/responses';
import { SCRIPT, STYLESHEET } from './assets';
import { PAGE_SECURITY_HEADERS, errorPage, wantsHtml } from './respond';

/** GET /assets/app.css and /assets/app.js (public in private mode too: they hold nothing private). */
export function asset(request: IRequest): Response {
  const file = request.params.file;
  const [body, type] = file === 'app.css' ? [STYLESHEET, 'text/css'] : file === 'app.js' ? [SCRIPT, 'text/javascript'] : [null, ''];
  if (body === null) return notFound(`no asset ${file}`);
  return new Response(body, {
    headers: { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'public, max-age=300', ...PAGE_SECURITY_HEADERS },
  });
}

/** Unknown paths: an HTML page for browsers (Accept: text/html), the JSON {"errors": […]} API clients read otherwise. */
export function notFoundFor(request: IRequest): Response | Promise<Response> {
  if (wantsHtml(request)) return errorPage(request, new URL(request.url).host, `There is no page at ${new URL(request.url).pathname}.`);
  return notFound();
}
