import type { Settings } from '../config';
import { base64url, constantTimeEqual, fromBase64url } from './crypto/bytes';
import { hmacSha256 } from './crypto/hmac';

/**
 * Time-limited signed release-file URLs for private mode. Terraform never
 * sends credentials to archive, SHA256SUMS or signature URLs (network mirror
 * protocol, "Authentication"), so each such URL in a private response
 * carries `?expires=UNIX_SECONDS&signature=BASE64URL` where the signature is
 * HMAC-SHA256, keyed with URL_SIGNING_SECRET, over
 *
 *     "GET\n" + PATH + "\n" + EXPIRES
 *
 * PATH is the URL's path exactly as sent (percent-encoding included), so a
 * signature is valid for one file only. URLs are signed for GET; a HEAD on
 * the same URL is verified as GET (it reads the same file). The host is not
 * signed, so a URL stays valid when ARCHIVE_BASE_URL points at another host
 * of the same Worker.
 */

/** What signing needs of the settings: the secret (and, to sign, the lifetime). */
type SigningSettings = Pick<Settings, 'signingSecret'>;

async function mac(config: SigningSettings, method: string, path: string, expires: number): Promise<Uint8Array> {
  return hmacSha256(config.signingSecret, `${method}\n${path}\n${expires}`);
}

/**
 * The query string ("expires=…&signature=…") that makes `path` fetchable
 * with GET or HEAD until `expires` (Unix seconds). Throws ConfigError when
 * URL_SIGNING_SECRET is not set.
 */
export async function signatureQuery(config: SigningSettings, path: string, expires: number): Promise<string> {
  return `expires=${expires}&signature=${base64url(await mac(config, 'GET', path, expires))}`;
}

// A stored release-file URL inside a JSON body: a path-absolute JSON string value. Any character but a
// quote or escape may follow (hostnames carry ":port"), so no release URL can be left unsigned.
const RELEASE_URL = /"(\/v1\/archives\/[^"\\?#]+)"/g;

/**
 * The signing window `now` falls in. Every URL signed in one window carries
 * the same expiry — the window's start plus SIGNED_URL_MINUTES — so a signed
 * document is the same text for the whole window and the isolate can keep it
 * (compressed once) until `until`. A window lasts min(60 s, a quarter of the
 * lifetime): a URL is served with between three quarters of its lifetime and
 * all of it left, never more. `signedAt` is the instant to sign at.
 */
export function signingWindow(config: Pick<Settings, 'signedUrlMinutes'>, now: number): { signedAt: number; until: number } {
  const length = Math.max(1000, Math.min(60_000, Math.floor((config.signedUrlMinutes * 60_000) / 4 / 1000) * 1000));
  const signedAt = Math.floor(now / length) * length;
  return { signedAt, until: signedAt + length };
}

/**
 * Signs every path-absolute release-file URL ("/v1/archives/…") in a stored
 * JSON body, valid for `config.signedUrlMinutes` from `now`. Other bytes are
 * kept. Throws ConfigError when URL_SIGNING_SECRET is not set, or (never
 * expected) an Error when a release URL would be left unsigned.
 */
export async function signReleaseUrls(body: string, config: Pick<Settings, 'signingSecret' | 'signedUrlMinutes'>, now = Date.now()): Promise<string> {
  const minutes = config.signedUrlMinutes;
  const expires = Math.floor(now / 1000) + Math.round(minutes * 60);
  const paths = [...new Set([...body.matchAll(RELEASE_URL)].map((m) => m[1]!))];
  const signed = new Map(await Promise.all(paths.map(async (p) => [p, await signatureQuery(config, p, expires)] as const)));
  const result = body.replace(RELEASE_URL, (_, path: string) => `"${path}?${signed.get(path)}"`);
  // Fail closed: a release URL the pattern missed would be served unsigned.
  if (/"\/v1\/archives\/[^"?]*"/.test(result)) throw new Error('a release-file URL in a stored body could not be signed');
  return result;
}

/** Signed paths of the current signing windows, per isolate (bounded: emptied when full). */
const signedPaths = new Map<string, string>();
const SIGNED_PATHS_MAX = 4096;

/**
 * `path` (a path-absolute release-file URL, e.g. a module package's) with the query that signs it, as
 * signReleaseUrls signs a document's URLs: at the start of `now`'s signing window, so valid SIGNED_URL_MINUTES
 * from then (three quarters of the lifetime or more left when served). The same text for the whole window: it
 * is kept in the isolate per secret, lifetime, window and path, so a request in a window already signed makes no
 * HMAC. Throws ConfigError when URL_SIGNING_SECRET is not set.
 */
export async function signedPathInWindow(config: Pick<Settings, 'signingSecret' | 'signedUrlMinutes'>, path: string, now = Date.now()): Promise<string> {
  const { signedAt } = signingWindow(config, now);
  const key = `${config.signingSecret}\n${config.signedUrlMinutes}\n${signedAt}\n${path}`;
  const kept = signedPaths.get(key);
  if (kept !== undefined) return kept;
  const expires = Math.floor(signedAt / 1000) + Math.round(config.signedUrlMinutes * 60);
  const signed = `${path}?${await signatureQuery(config, path, expires)}`;
  if (signedPaths.size >= SIGNED_PATHS_MAX) signedPaths.clear();
  signedPaths.set(key, signed);
  return signed;
}

export type Verification = { ok: true; expires: number } | { ok: false; message: string };

/**
 * Checks a request for a release file against its signature. Fails — for a
 * 403 — when `expires` or `signature` is missing, repeated or malformed,
 * when the URL has expired, or when the signature does not match this
 * method (HEAD counts as GET), path and expiry: tampered or re-targeted to
 * another file. Throws ConfigError only, when URL_SIGNING_SECRET is not set.
 */
export async function verifySignedUrl(request: Request, config: SigningSettings, now = Date.now()): Promise<Verification> {
  const url = new URL(request.url);
  const expiresValues = url.searchParams.getAll('expires');
  const signatureValues = url.searchParams.getAll('signature');
  if (expiresValues.length === 0 || signatureValues.length === 0) {
    return { ok: false, message: 'this download URL is not signed; get a fresh one from the registry or mirror' };
  }
  if (expiresValues.length !== 1 || signatureValues.length !== 1 || !/^\d{1,12}$/.test(expiresValues[0]!)) {
    return { ok: false, message: 'this download URL has a malformed signature' };
  }
  const expires = Number(expiresValues[0]);
  const given = fromBase64url(signatureValues[0]!);
  if (given === null || given.byteLength !== 32) return { ok: false, message: 'this download URL has a malformed signature' };
  const method = request.method === 'HEAD' ? 'GET' : request.method;
  const expected = await mac(config, method, url.pathname, expires);
  if (!constantTimeEqual(given, expected)) return { ok: false, message: "this download URL's signature does not match it" };
  if (expires * 1000 <= now) {
    return { ok: false, message: 'this download URL has expired; get a fresh one from the registry or mirror' };
  }
  return { ok: true, expires };
}
