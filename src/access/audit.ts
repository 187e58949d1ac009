import type { Env } from '../env';
import { appendAuditEntry } from '../store/audit/write';
import type { TokenPerson } from '../store/tokens/read';
import type { Actor } from '../store/audit/actor';

/**
 * Sign-in's entries in the audit log (src/store/audit/, one R2 object
 * each): every login (granted or refused by the policy), every token a
 * person creates and every revocation. Never a token or secret: tokens are
 * named by their public id.
 */

const personActor = (person: TokenPerson): Actor => ({
  kind: 'person',
  issuer: person.issuer,
  subject: person.subject,
  ...(person.email ? { email: person.email } : {}),
});
const who = (person: TokenPerson) => person.email ?? person.subject;

/** A login through the broker: `cli` (terraform login), `page` (SSO on the pages), or `refused` by LOGIN_POLICY. */
export async function recordLogin(env: Env, person: TokenPerson, outcome: 'cli' | 'page' | 'refused', scopes: string[]): Promise<void> {
  await appendAuditEntry(
    { blobs: env.REGISTRY_R2 },
    {
      actor: personActor(person),
      action: outcome === 'page' ? 'login.page' : 'login.cli',
      target: `person ${who(person)}`,
      outcome: outcome === 'refused' ? 'refused' : 'ok',
      reason: outcome === 'refused' ? 'no LOGIN_POLICY rule matches' : `scopes: ${scopes.join(', ')}`,
    },
  );
}

/** A token created (terraform login, Tokens page) or revoked (Tokens page) by `actor`. */
export async function recordTokenEvent(
  env: Env,
  actor: TokenPerson,
  event: 'token.create' | 'token.revoke',
  token: { id: string; scopes?: string[]; owner?: TokenPerson },
): Promise<void> {
  const details = [token.owner ? `owner ${who(token.owner)}` : 'owner operator', token.scopes ? `scopes: ${token.scopes.join(', ')}` : ''].filter(Boolean);
  await appendAuditEntry(
    { blobs: env.REGISTRY_R2 },
    {
      actor: personActor(actor),
      action: event,
      target: `token ${token.id}`,
      outcome: 'ok',
      reason: details.join('; '),
    },
  );
}
