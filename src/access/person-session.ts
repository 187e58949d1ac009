import type { Env } from '../env';
import { settings } from '../config';
import type { TokenPerson } from '../store/tokens/read';
import { revokedSince } from '../store/identity/person-tokens';
import { sessionEnded } from '../store/identity/ended-sessions';
import { seal, unseal } from './crypto/seal';

/**
 * The page session of a person who signed in with the identity provider:
 * the cookie `__Host-session = "p." SEALED` (seal.ts, purpose
 * person-session) holding issuer, subject, email, the scopes and admin role
 * the policy granted at sign-in, and the expiry; no KV read per page. It ends SESSION_SECONDS after the identity
 * provider issued the ID token (its `iat`), or earlier: it never outlives
 * the provider-issued identity by more than the session lifetime, an
 * admin's "revoke all" of the person ends it at the next request (one R2
 * head per page: .people/PERSON/revoked), and so does signing out, for every
 * copy of the cookie (a second R2 head, side by side: .ended-sessions/).
 */

export const PERSON_SESSION_PREFIX = 'p.';

export interface PersonSession {
  person: TokenPerson;
  scopes: string[];
  admin: boolean;
  /** Epoch seconds. */
  expires: number;
  /** Epoch seconds of sign-in: an admin's "revoke all" after it ends the session. */
  issued: number;
}

/** The cookie value for a new person session. */
export async function sealPersonSession(env: Env, session: PersonSession): Promise<string> {
  return PERSON_SESSION_PREFIX + (await seal(settings(env), 'person-session', session));
}

/** The person session in a cookie value, or null (never throws for bad input): not ours, altered, expired, revoked by an admin or signed out. */
export async function openPersonSession(env: Env, value: string, now = Date.now()): Promise<PersonSession | null> {
  if (!value.startsWith(PERSON_SESSION_PREFIX)) return null;
  const opened = (await unseal(settings(env), 'person-session', value.slice(PERSON_SESSION_PREFIX.length))) as PersonSession | null;
  if (opened === null || typeof opened !== 'object' || typeof opened.expires !== 'number' || opened.expires * 1000 <= now) return null;
  if (typeof opened.person?.issuer !== 'string' || typeof opened.person.subject !== 'string') return null;
  if (!Array.isArray(opened.scopes) || typeof opened.admin !== 'boolean' || typeof opened.issued !== 'number') return null;
  // Offboarding: an admin revoked all of this person's tokens after this sign-in; or this session signed out
  // (POST /logout) and this is a copy of its cookie. Two R2 heads per request, side by side.
  const [revoked, ended] = await Promise.all([revokedSince(env.REGISTRY_R2, opened.person, opened.issued * 1000), sessionEnded(env.REGISTRY_R2, value)]);
  if (revoked || ended) return null;
  return opened;
}
