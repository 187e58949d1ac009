import type { Env } from '../env';
import type { TokenPerson } from '../store/tokens';

/**
 * Sign-in and token events for the audit log. Until the shared audit log
 * (src/store/audit/write.ts) exists this writes one structured log line per
 * event (never a token or secret); see docs/sign-in.md.
 */
export async function recordLogin(_env: Env, person: TokenPerson, outcome: 'cli' | 'page' | 'refused', scopes: string[]): Promise<void> {
  console.log(JSON.stringify({ event: 'login', outcome, issuer: person.issuer, subject: person.subject, email: person.email, scopes }));
}

/** A token created or revoked through sign-in or the Tokens page. */
export async function recordTokenEvent(
  _env: Env, actor: TokenPerson, event: 'token.create' | 'token.revoke', token: { id: string; scopes?: string[]; owner?: TokenPerson },
): Promise<void> {
  console.log(JSON.stringify({ event, actor: { issuer: actor.issuer, subject: actor.subject, email: actor.email }, token }));
}
