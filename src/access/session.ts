import type { Env } from '../env';
import { settings } from '../config';
import { hmacSha256 } from './crypto/hmac';
import { parseTokenRecord, readTokenRecord, type TokenRecord } from '../store/tokens/read';
import { base64url, constantTimeEqual, fromBase64url } from './crypto/bytes';
import { authenticate, checkTokenRecord, tokenSha256 } from './tokens';
import { openPersonSession, PERSON_SESSION_PREFIX, type PersonSession } from './person-session';
import { endSession, sessionEnded } from '../store/identity/ended-sessions';

/**
 * Browser sessions for the pages of a private registry. Signing in with a
 * read token (the same tokens as the API) sets the cookie
 *
 *     __Host-session = TOKEN_SHA256_HEX "." EXPIRES_UNIX "." HMAC
 *
 * HttpOnly, Secure, SameSite=Lax, Path=/, where HMAC is HMAC-SHA256 keyed
 * with URL_SIGNING_SECRET over "session\n" + hash + "\n" + expires (the
 * prefix keeps it from ever verifying as a signed URL). The token itself is
 * not in the cookie. Every request re-reads the token record, so revoking
 * or expiring the token ends its sessions at once, and checks that the
 * session was not ended by signing out (src/store/identity/ended-sessions.ts):
 * a copy of the cookie stops working when its session signs out.
 */

export const SESSION_COOKIE = '__Host-session';
/** A session lasts 12 hours, or until its token expires if that is sooner. */
export const SESSION_SECONDS = 12 * 60 * 60;

export interface Session {
  record: TokenRecord;
  expires: number;
  /** Set when a person signed in with the identity provider (src/access/person-session.ts); `record` then mirrors it. */
  person?: PersonSession;
}

async function mac(env: Env, hash: string, expires: number): Promise<Uint8Array> {
  return hmacSha256(settings(env).signingSecret, `session\n${hash}\n${expires}`);
}

/** The value of a cookie in a Cookie header, or null. */
export function cookieValue(header: string | null, name: string): string | null {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/**
 * Checks a token given on the sign-in form. Resolves with the Set-Cookie
 * header value of a new session, or { error } saying why the token was
 * refused (unknown, revoked, expired or not a token of this registry).
 */
export async function signIn(token: string, env: Env, now = Date.now()): Promise<{ cookie: string } | { error: string }> {
  const auth = await authenticate(new Request('https://sign-in/', { headers: { authorization: `Bearer ${token.trim()}` } }), env.REGISTRY_KV, now);
  if (!auth.ok) return { error: auth.error ? auth.message : 'enter a read token' };
  const tokenExpires = auth.record.expires === null ? Infinity : Math.floor(Date.parse(auth.record.expires) / 1000);
  const expires = Math.min(Math.floor(now / 1000) + SESSION_SECONDS, tokenExpires);
  const hash = tokenSha256(token.trim());
  const value = `${hash}.${expires}.${base64url(await mac(env, hash, expires))}`;
  return { cookie: `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${expires - Math.floor(now / 1000)}; HttpOnly; Secure; SameSite=Lax` };
}

/**
 * Signs the request's session out server-side: when its cookie is a live
 * session, records it as ended (one R2 write), so the cookie — and every
 * copy of it — is refused from the next request on. Resolves with the
 * Set-Cookie header value that clears it in this browser (SIGN_OUT_COOKIE)
 * either way.
 */
export async function signOut(request: Request, env: Env, now = Date.now()): Promise<string> {
  const value = cookieValue(request.headers.get('cookie'), SESSION_COOKIE);
  const session = value === null ? null : await readSessionValue(value, env, now);
  if (value !== null && session !== null) await endSession(env.REGISTRY_R2, value, session.expires);
  return SIGN_OUT_COOKIE;
}

/** The Set-Cookie header value that ends a session in the browser (signOut also ends it on the server). */
export const SIGN_OUT_COOKIE = `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax`;

/**
 * The session of a request: null when there is no cookie, it is malformed,
 * its HMAC does not verify, it has expired, it was ended by signing out, or
 * its token's record is gone (revoked), damaged or expired. One uncached KV
 * read (the token record) and one R2 head (ended?), side by side, when the
 * cookie verifies; a person's session: openPersonSession's. Never throws
 * for bad input.
 */
export async function readSession(request: Request, env: Env, now = Date.now()): Promise<Session | null> {
  const value = cookieValue(request.headers.get('cookie'), SESSION_COOKIE);
  return value === null ? null : readSessionValue(value, env, now);
}

/** readSession of a cookie value (`__Host-session`'s). */
async function readSessionValue(value: string, env: Env, now: number): Promise<Session | null> {
  if (value.startsWith(PERSON_SESSION_PREFIX)) return personAsSession(await openPersonSession(env, value, now));
  const match = /^([0-9a-f]{64})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return null;
  const [, hash, expiresText, signature] = match as unknown as [string, string, string, string];
  const expires = Number(expiresText);
  if (expires * 1000 <= now) return null;
  const given = fromBase64url(signature);
  if (given === null || !constantTimeEqual(given, await mac(env, hash, expires))) return null;
  const [text, ended] = await Promise.all([readTokenRecord(env.REGISTRY_KV, hash), sessionEnded(env.REGISTRY_R2, value)]);
  if (ended) return null;
  const check = checkTokenRecord(text === null ? null : parseTokenRecord(text), hash, 'read', now);
  return check.ok ? { record: check.record, expires } : null;
}

/** A person's session in the shape the pages use: `record` carries their name (email) and the scopes granted at sign-in. */
function personAsSession(person: PersonSession | null): Session | null {
  if (person === null) return null;
  const expires = new Date(person.expires * 1000).toISOString();
  return {
    record: { id: '', name: person.person.email ?? person.person.subject, sha256: '', scopes: person.scopes, created: '', expires, person: person.person },
    expires: person.expires,
    person,
  };
}

/** The Set-Cookie header value of a session cookie with this value, ending at `expires` (epoch seconds). */
export function sessionCookie(value: string, expires: number, now = Date.now()): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${Math.max(0, expires - Math.floor(now / 1000))}; HttpOnly; Secure; SameSite=Lax`;
}

/**
 * True when a form post comes from this site: its Origin header equals the
 * request's own origin (browsers send Origin on every POST). A missing or
 * foreign Origin is refused, so another site cannot sign a visitor in or out.
 */
export function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin');
  return origin !== null && origin === new URL(request.url).origin;
}
