import type { IRequest } from 'itty-router';
import { DocumentCache, Freshness } from '../store/document-cache';
import { settings, type Settings } from '../config';
import { StoredDocument } from '../store/stored-body';
import type { Env } from '../env';
import { refusalStatus } from '../http/errors';
import { readSession, type Session } from '../access/session';
import { scopeGrants } from '../access/scope';
import { errorPage, htmlResponse, redirect } from './respond';

/**
 * What every page handler gets: the request, its URL and host (snippets name
 * the host the browser used), the session in private mode, and a cache of
 * rendered pages (public mode only: a private page depends on the session).
 */
export interface PageContext {
  request: Request;
  env: Env;
  /** The Worker's settings, parsed once (src/config.ts): pages read no raw env variable. */
  config: Settings;
  url: URL;
  /** host[:port] as the browser sees this registry. */
  host: string;
  /** The signed-in session in private mode; null in public mode. */
  session: Session | null;
  /** Pass to every store read: the rendered page is cached no longer than the data it shows. */
  freshness: Freshness;
}

/** True when the visitor may see providers of `namespace` at `hostname` (always in public mode). */
export function canSee(ctx: PageContext, hostname: string, namespace: string): boolean {
  return ctx.session === null || scopeGrants(ctx.session.record.scopes, 'read', { hostname, namespace }, ctx.config.hostname);
}

const rendered = new DocumentCache(8 * 1024 * 1024);

export interface RenderedPage {
  html: string;
  status?: number;
}

/**
 * The pages' guard (src/index.ts: `pageSession` before every page() route): in private mode a request
 * without a valid session is redirected to /login (never a page body); the session found is put on the
 * request for page() (null in public mode).
 */
export async function pageSession(request: IRequest, env: Env): Promise<Response | undefined> {
  if (settings(env).access !== 'private') {
    request.session = null;
    return undefined;
  }
  const session = await readSession(request, env);
  if (session === null) {
    const url = new URL(request.url);
    return redirect(`/login?next=${encodeURIComponent(url.pathname + url.search)}`);
  }
  request.session = session;
  return undefined;
}

/**
 * Wraps a page handler behind the pageSession guard (its session is the page's; a private-mode request
 * that did not pass the guard throws, a 500, never a page); a refusal (a malformed
 * name or version: InputError; NotStoredError, …) becomes an HTML error
 * page with its status (src/http/errors.ts). In public
 * mode a 200 page is cached in the isolate until the earliest expiry of the
 * cached data it was rendered from (at most INDEX_CACHE_SECONDS, as that data
 * is), so a page is never staler than the API, and sent with that max-age;
 * gzip as for documents.
 */
export function page(render: (ctx: PageContext, params: Record<string, string>) => Promise<RenderedPage | Response>) {
  return async (request: IRequest, env: Env): Promise<Response> => {
    const url = new URL(request.url);
    const config = settings(env);
    const privateMode = config.access === 'private';
    const session: Session | null = privateMode ? (request.session ?? null) : null;
    if (privateMode && session === null) throw new Error(`page ${url.pathname} is routed without the pageSession guard`);
    const ctx: PageContext = { request, env, config, url, host: url.host, session, freshness: new Freshness() };
    const ttl = config.listTtlMs;
    const compress = config.gzipDocuments;
    const cacheKey = `${url.host}${url.pathname}${url.search}`;
    if (!privateMode) {
      const cached = rendered.get(cacheKey);
      if (cached) return htmlResponse(request, cached, { cacheControl: `public, max-age=${Math.round(ttl / 1000)}`, compress });
    }
    let result: RenderedPage | Response;
    try {
      result = await render(ctx, request.params as Record<string, string>);
    } catch (error) {
      const status = refusalStatus(error);
      if (status !== null) return errorPage(request, url.host, (error as Error).message, status);
      throw error;
    }
    if (result instanceof Response) return result;
    const status = result.status ?? 200;
    if (privateMode || status !== 200) {
      return htmlResponse(request, result.html, { status, cacheControl: privateMode ? 'private, no-store' : 'no-store', compress });
    }
    const document = new StoredDocument(result.html);
    // Not `ttl` from now: the data may have been cached a while already.
    rendered.set(cacheKey, document, Math.min(ttl, ctx.freshness.until - Date.now()));
    return htmlResponse(request, document, { cacheControl: `public, max-age=${Math.round(ttl / 1000)}`, compress });
  };
}
