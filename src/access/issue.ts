import { newToken, tokenId, tokenSha256 } from './tokens';
import type { TokenPerson, TokenRecord } from '../store/tokens/read';
import { writePersonToken } from '../store/identity/person-tokens';

const DAY_MS = 86_400_000;

/**
 * Mints a read token for a person (terraform login, the Tokens page): stores
 * only its hash, with the person, scopes and expiry (KV: one write; R2 index:
 * one write). Returns the token — shown or sent once, never stored — and
 * its record. The caller has already limited `scopes` to what the policy
 * grants and `days` to LOGIN_POLICY.token_days.
 */
export async function issuePersonToken(
  kv: KVNamespace,
  blobs: R2Bucket,
  options: { person: TokenPerson; scopes: string[]; days: number; name: string; now?: number },
): Promise<{ token: string; record: TokenRecord & { person: TokenPerson } }> {
  const now = options.now ?? Date.now();
  const token = newToken();
  const sha256 = tokenSha256(token);
  const record = {
    id: tokenId(sha256),
    name: options.name.slice(0, 100),
    sha256,
    scopes: options.scopes,
    created: new Date(now).toISOString(),
    expires: new Date(now + options.days * DAY_MS).toISOString(),
    person: options.person,
  };
  await writePersonToken(kv, blobs, record);
  return { token, record };
}
