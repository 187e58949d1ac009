import { loginCodeObjectKey } from '../layout';
import type { TokenPerson } from '../tokens/read';

/**
 * One-time login.v1 codes in R2 (strongly consistent, conditional writes),
 * stored by the SHA-256 of the code, never the code itself. Single use even
 * when two requests race in different locations: redeeming reads the
 * object, then overwrites it with `If-Match: <etag read>`; of two redeemers
 * that read the same object exactly one write succeeds, and the object is
 * deleted right after, so a later try finds nothing. KV would not do: a
 * code read in two locations within its ≤ 60 s propagation would be
 * accepted twice.
 */
export interface LoginCodeRecord {
  /** Terraform's S256 code_challenge the code is bound to. */
  codeChallenge: string;
  /** Terraform's redirect_uri the code is bound to (the token request must repeat it). */
  redirectUri: string;
  /** Epoch milliseconds after which the code is refused. */
  expiresAt: number;
  /** Epoch milliseconds the code was issued: an admin's "revoke all" of the person at or after it makes it worthless (revokedSince). */
  issuedAt: number;
  person: TokenPerson;
  scopes: string[];
  /** Lifetime of the token it is exchanged for, in days (LOGIN_POLICY.token_days at sign-in). */
  tokenDays: number;
}

/** Stores a new code's record (create-only). Throws when an object with that name exists (a 2^-256 event, or a bug). */
export async function storeLoginCode(blobs: R2Bucket, codeSha256Hex: string, record: LoginCodeRecord): Promise<void> {
  const written = await blobs.put(loginCodeObjectKey(codeSha256Hex), JSON.stringify(record), {
    httpMetadata: { contentType: 'application/json' },
    onlyIf: { etagDoesNotMatch: '*' },
  });
  if (written === null) throw new Error('a login code with this hash exists already');
}

/**
 * Redeems a code: resolves with its record when this call is the one that
 * claimed it, or null when it is unknown, already redeemed (also by a
 * concurrent call) or damaged. The caller checks expiry, PKCE and redirect
 * URI afterwards, so a failed check still burns the code (RFC 6749 §4.1.2).
 * Two R2 reads/writes plus a delete when it wins.
 */
export async function redeemLoginCode(blobs: R2Bucket, codeSha256Hex: string): Promise<LoginCodeRecord | null> {
  const key = loginCodeObjectKey(codeSha256Hex);
  const object = await blobs.get(key);
  if (object === null) return null;
  const text = await object.text();
  let record: (LoginCodeRecord & { redeemed?: boolean }) | null = null;
  try {
    record = JSON.parse(text) as LoginCodeRecord & { redeemed?: boolean };
  } catch {
    record = null;
  }
  if (record === null || record.redeemed === true) return null;
  const claimed = await blobs.put(key, JSON.stringify({ ...record, redeemed: true }), { onlyIf: { etagMatches: object.etag } });
  if (claimed === null) return null;
  await blobs.delete(key);
  return parseLoginCode(record);
}

function parseLoginCode(r: LoginCodeRecord): LoginCodeRecord | null {
  // A code stored without issuedAt (before it existed; they live 2 minutes) cannot be checked against a revocation: refused.
  if (typeof r.codeChallenge !== 'string' || typeof r.redirectUri !== 'string' || typeof r.expiresAt !== 'number' || typeof r.issuedAt !== 'number')
    return null;
  if (typeof r.person?.issuer !== 'string' || typeof r.person.subject !== 'string') return null;
  if (!Array.isArray(r.scopes) || !r.scopes.every((s) => typeof s === 'string') || typeof r.tokenDays !== 'number') return null;
  return r;
}
