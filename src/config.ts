import type { Env } from './env';
import { IMMUTABLE } from './http';
import { signReleaseUrls } from './auth/signed-urls';

/**
 * True unless ACCESS is "public": private mode (bearer tokens for metadata,
 * signed release-file URLs). Any other value, a typo included, fails closed.
 */
export function isPrivate(env: Env): boolean {
  return env.ACCESS !== 'public';
}

/** True when stored documents go out gzip-compressed to clients that accept it (GZIP_DOCUMENTS = "true"). */
export function gzipDocuments(env: Env): boolean {
  return env.GZIP_DOCUMENTS === 'true';
}

/** Milliseconds an isolate may reuse a version list (INDEX_CACHE_SECONDS, default 5). */
export function listTtlMs(env: Env): number {
  const seconds = Number(env.INDEX_CACHE_SECONDS ?? '5');
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 5000;
}

/**
 * Cache-Control for version lists: as long as an isolate may keep them;
 * `private` in private mode, so no shared cache serves them to another token.
 */
export function listCacheControl(env: Env): string {
  return `${isPrivate(env) ? 'private' : 'public'}, max-age=${Math.round(listTtlMs(env) / 1000)}`;
}

/**
 * Cache-Control for documents with release-file URLs (find a package, mirror
 * VERSION.json): immutable in public mode; never stored in private mode,
 * since they are per-token and their signed URLs expire.
 */
export function releaseDocumentCacheControl(env: Env): string {
  return isPrivate(env) ? 'private, no-store' : IMMUTABLE;
}

/**
 * Cache-Control for a release file: immutable in public mode; in private
 * mode only a private cache may keep it, and no longer than its signed URL
 * is valid (its `expires`, already verified by requireSignedUrl).
 */
export function releaseFileCacheControl(request: Request, env: Env, now = Date.now()): string {
  if (!isPrivate(env)) return IMMUTABLE;
  const expires = Number(new URL(request.url).searchParams.get('expires'));
  const seconds = Number.isFinite(expires) ? Math.floor(expires - now / 1000) : 0;
  return `private, max-age=${Math.max(0, seconds)}`;
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

/**
 * The release-file URLs of a stored body as served: in private mode each is
 * signed (signReleaseUrls: ?expires=…&signature=…, valid SIGNED_URL_MINUTES)
 * and then, like in public mode, made absolute on ARCHIVE_BASE_URL when set.
 * Public mode stays synchronous and returns withArchiveBase's result. Throws
 * (500) in private mode when URL_SIGNING_SECRET is not set.
 */
export function withReleaseUrls(body: string, env: Env): string | Promise<string> {
  if (!isPrivate(env)) return withArchiveBase(body, env);
  return signReleaseUrls(body, env).then((signed) => withArchiveBase(signed, env));
}
