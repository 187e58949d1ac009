import type { Env } from './env';

/** Milliseconds an isolate may reuse a version list (INDEX_CACHE_SECONDS, default 5). */
export function listTtlMs(env: Env): number {
  const seconds = Number(env.INDEX_CACHE_SECONDS ?? '5');
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 5000;
}

/** Cache-Control for version lists: as long as an isolate may keep them. */
export function listCacheControl(env: Env): string {
  return `public, max-age=${Math.round(listTtlMs(env) / 1000)}`;
}

/**
 * Stored bodies carry path-absolute release-file URLs ("/v1/archives/…").
 * With ARCHIVE_BASE_URL set they are made absolute on that base; a plain
 * string replacement suffices because only URL values start with that quote.
 */
export function withArchiveBase(body: string, env: Env): string {
  const base = (env.ARCHIVE_BASE_URL ?? '').replace(/\/+$/, '');
  return base === '' ? body : body.replaceAll('"/v1/archives/', `"${base}/v1/archives/`);
}
