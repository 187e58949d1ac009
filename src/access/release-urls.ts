import type { Env } from '../env';
import { settings } from '../config';
import { signReleaseUrls } from './signed-urls';

/**
 * Rewriting the release-file URLs of a stored body as it is served. Stored
 * bodies carry path-absolute URLs ("/v1/archives/…"), so one stored document
 * serves any hostname; these functions sign them (private mode) and make them
 * absolute on ARCHIVE_BASE_URL (when set).
 */

/**
 * `body` with every "/v1/archives/… URL made absolute on ARCHIVE_BASE_URL;
 * unchanged when it is not set. A plain string replacement suffices because
 * only URL values start with that quote.
 */
export function withArchiveBase(body: string, env: Env): string {
  const base = settings(env).archiveBaseUrl;
  return base === '' ? body : body.replaceAll('"/v1/archives/', `"${base}/v1/archives/`);
}

/**
 * The release-file URLs of a stored body as served: in private mode each is
 * signed (signReleaseUrls: ?expires=…&signature=…, valid SIGNED_URL_MINUTES)
 * and then, like in public mode, made absolute on ARCHIVE_BASE_URL when set.
 * Public mode stays synchronous and returns withArchiveBase's result. Throws
 * ConfigError (500) in private mode when URL_SIGNING_SECRET is not set.
 */
export function withReleaseUrls(body: string, env: Env): string | Promise<string> {
  const config = settings(env);
  if (config.access === 'public') return withArchiveBase(body, env);
  return signReleaseUrls(body, config, Date.now()).then((signed) => withArchiveBase(signed, env));
}

/**
 * A providers.v1 download document's release-file URLs as served: as
 * withReleaseUrls, then — when ARCHIVE_BASE_URL is not set — absolute on
 * `origin` (the scheme and host the request came to). The protocol allows a
 * relative download_url, and Terraform and OpenTofu resolve all three URLs
 * against the document's URL, but Renovate's terraform-provider datasource
 * fetches download_url and shasums_url exactly as given and cannot use a
 * path-absolute one ("cannot parse url": no lock-file hashes). Absolute URLs
 * work for every client.
 */
export async function withAbsoluteReleaseUrls(body: string, env: Env, origin: string): Promise<string> {
  return (await withReleaseUrls(body, env)).replaceAll('"/v1/archives/', `"${origin}/v1/archives/`);
}
