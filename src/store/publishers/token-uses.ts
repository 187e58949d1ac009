import { ciTokenUseKey } from '../layout';
import type { BlobStore } from '../store';

/**
 * One CI ID token, one publish: the first request that starts a publish (or a
 * lifecycle change) with a CI token records what it started in an R2 object
 * named by the token's issuer and `jti`, created only if absent
 * (If-None-Match: *, atomic in R2; KV is eventually consistent and could let
 * two Cloudflare locations both see "unused"). The record is kept until the
 * token's `exp` (an R2 lifecycle rule on `.ci-token-uses/` may delete it a
 * day later; the token is refused by then anyway).
 *
 * Starting the same publish again with the same token (the CLI re-run after
 * a network failure, a dry run followed by the publish) is allowed: the
 * token is bound to that one release, as npm's and PyPI's short-lived upload
 * credentials are. Uploads and the commit of the session it started carry the
 * same token (src/routes/publish/uploads.ts compares the `jti`).
 */

export interface TokenUse {
  /** What the token started: the audit action and target (`provider.publish HOST/NS/TYPE VERSION`). */
  started: string;
  /** ISO time of the first use. */
  time: string;
  /** ISO time the token expires: the record is garbage after it. */
  expires: string;
}

async function useDigest(issuer: string, jti: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${issuer}\n${jti}`)));
  return [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Records that the token (`issuer`, `jti`) starts `started`. Resolves with
 * null when it may (first use, or the same publish again), else with the
 * earlier use (the caller refuses). Throws only what R2 throws.
 */
export async function claimTokenUse(
  blobs: BlobStore,
  hostname: string,
  token: { issuer: string; jti: string; expires: Date },
  started: string,
  now = new Date(),
): Promise<TokenUse | null> {
  const key = ciTokenUseKey(hostname, await useDigest(token.issuer, token.jti));
  const use: TokenUse = { started, time: now.toISOString(), expires: token.expires.toISOString() };
  const written = await blobs.put(key, JSON.stringify(use), { httpMetadata: { contentType: 'application/json' }, onlyIf: { etagDoesNotMatch: '*' } });
  if (written !== null) return null;
  const earlier = await blobs.get(key);
  if (earlier === null) return { started: 'another publish', time: '', expires: use.expires };
  let previous: TokenUse;
  try {
    previous = JSON.parse(await earlier.text()) as TokenUse;
  } catch {
    return { started: 'another publish', time: '', expires: use.expires };
  }
  return previous.started === started ? null : previous;
}
