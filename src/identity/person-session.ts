import type { Env } from '../env';
import type { TokenPerson } from '../store/tokens/read';
import { seal, unseal } from './seal';

/**
 * The page session of a person who signed in with the identity provider:
 * the cookie `__Host-session = "p." SEALED` (seal.ts, purpose
 * person-session) holding issuer, subject, email, the scopes and admin role
 * the policy granted at sign-in, and the expiry. No KV or R2 per page: the
 * session is the sealed cookie. It ends SESSION_SECONDS after the identity
 * provider issued the ID token (its `iat`), or earlier: it never outlives
 * the provider-issued identity by more than the session lifetime.
 */

export const PERSON_SESSION_PREFIX = 'p.';

export interface PersonSession {
  person: TokenPerson;
  scopes: string[];
  admin: boolean;
  /** Epoch seconds. */
  expires: number;
}

/** The cookie value for a new person session. */
export async function sealPersonSession(env: Env, session: PersonSession): Promise<string> {
  return PERSON_SESSION_PREFIX + await seal(env, 'person-session', session);
}

/** The person session in a cookie value, or null (never throws for bad input): not ours, altered, or expired. */
export async function openPersonSession(env: Env, value: string, now = Date.now()): Promise<PersonSession | null> {
  if (!value.startsWith(PERSON_SESSION_PREFIX)) return null;
  const opened = await unseal(env, 'person-session', value.slice(PERSON_SESSION_PREFIX.length)) as PersonSession | null;
  if (opened === null || typeof opened !== 'object' || typeof opened.expires !== 'number' || opened.expires * 1000 <= now) return null;
  if (typeof opened.person?.issuer !== 'string' || typeof opened.person.subject !== 'string') return null;
  if (!Array.isArray(opened.scopes) || typeof opened.admin !== 'boolean') return null;
  return opened;
}
