import { sha256Hex } from '../protocol/hashes';
import { type TokenPurpose, type TokenRecord } from '../store/tokens/read';
import { readTokenRecordCached } from '../store/tokens/cached-read';
import { base64url, constantTimeEqualText } from './crypto/bytes';

/**
 * Read tokens: what Terraform and OpenTofu send as `Authorization: Bearer …`
 * (from `credentials "HOST" { token = "…" }` or TF_TOKEN_HOST). A token is
 * "ert_" followed by 32 random bytes in base64url; the prefix lets secret
 * scanners recognise a leaked one. Only its SHA-256 is stored (see
 * src/store/tokens/write.ts), so KV never holds a usable token.
 *
 * A read token's scopes say which namespaces it may read: "*", NAMESPACE,
 * HOST/NAMESPACE or HOST/*, parsed and matched by the one scope rule of
 * src/access/scope.ts (parseScope and scopeGrants, form 'read').
 */

export const TOKEN_PREFIX = 'ert_';
const TOKEN_PATTERN = /^ert_[A-Za-z0-9_-]{43}$/;

/** A new random read token (32 bytes from the platform CSPRNG). Show it once; store only tokenSha256(token). */
export function newToken(): string {
  return TOKEN_PREFIX + base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The lower-case hex SHA-256 of a token (@noble/hashes): its KV key and its record's `sha256`. */
export function tokenSha256(token: string): string {
  return sha256Hex(token);
}

/** The public id of a token: the first 12 hex digits of its hash. */
export function tokenId(tokenSha256Hex: string): string {
  return tokenSha256Hex.slice(0, 12);
}

/**
 * The token in an `Authorization: Bearer TOKEN` header (scheme
 * case-insensitive), 'missing' when there is no Authorization header, and
 * 'malformed' when it is another scheme, has more than one credential, or
 * the credential is not shaped like a token of this registry. Never throws.
 */
export function bearerToken(header: string | null): string | 'missing' | 'malformed' {
  if (header === null || header.trim() === '') return 'missing';
  const match = /^\s*bearer +(\S+)\s*$/i.exec(header);
  if (!match || !TOKEN_PATTERN.test(match[1]!)) return 'malformed';
  return match[1]!;
}

export type Authentication =
  | { ok: true; record: TokenRecord }
  /** `error` is the RFC 6750 error code for WWW-Authenticate, absent when no credentials were sent. */
  | { ok: false; message: string; error?: 'invalid_token' };

/**
 * Authenticates a request by its bearer read token. Its record comes from
 * readTokenRecordCached: one KV read, or none when this isolate read it less
 * than 30 s ago, so a revocation made elsewhere is refused within the 60 s
 * bound (docs/private.md); every check below runs on every request. Fails — for a 401 — when
 * the header is missing or malformed, the token is unknown or revoked (no
 * record), its record is damaged, its hash does not match the record's
 * (compared in constant time), it has expired, or it is a publish token.
 * Never throws for bad input.
 */
export async function authenticate(request: Request, kv: KVNamespace, now = Date.now()): Promise<Authentication> {
  const token = bearerToken(request.headers.get('authorization'));
  if (token === 'missing') {
    return { ok: false, message: 'this registry is private: configure a token for this host (credentials block or TF_TOKEN_… variable)' };
  }
  if (token === 'malformed') {
    return { ok: false, message: 'the Authorization header is not "Bearer <token>" with a token of this registry', error: 'invalid_token' };
  }
  const hash = tokenSha256(token);
  const stored = await readTokenRecordCached(kv, hash, now);
  const check = checkTokenRecord(stored?.record ?? null, hash, 'read', now);
  if (stored && stored.record === null) console.error(`token record ${tokenId(hash)} is damaged; the token is refused`);
  return check.ok ? { ok: true, record: check.record } : { ok: false, message: check.message, error: 'invalid_token' };
}

/** What checkTokenRecord decided: the record, or why the token is refused (and its record when there is one, for the audit). */
export type TokenCheck =
  | { ok: true; record: TokenRecord }
  | { ok: false; reason: 'unknown' | 'expired' | 'purpose'; message: string; record: TokenRecord | null };

/**
 * The one validity check of a token's stored record (parsed by
 * parseTokenRecord; null when KV has none or it is damaged), for the read API (authenticate), the publish API
 * (publish-auth.ts) and page sessions (session.ts): the record exists and
 * parses, and its hash equals the presented token's (`hash`, compared in
 * constant time) — else 'unknown' (unknown, revoked or damaged); it has not
 * expired at `now` — else 'expired'; it is a token of `purpose` — else
 * 'purpose' (least privilege: a publish token reads nothing, a read token
 * publishes nothing). Never throws. What the token may reach (scopes,
 * packages) is the caller's next check.
 */
export function checkTokenRecord(record: TokenRecord | null, hash: string, purpose: TokenPurpose, now: number): TokenCheck {
  if (record === null || !constantTimeEqualText(record.sha256, hash)) {
    return { ok: false, reason: 'unknown', message: 'the token is not valid: unknown or revoked', record: null };
  }
  if (record.expires !== null && Date.parse(record.expires) <= now) {
    return { ok: false, reason: 'expired', message: `the token expired at ${record.expires}`, record };
  }
  if ((record.purpose ?? 'read') !== purpose) {
    const message =
      purpose === 'read'
        ? 'this is a publish token: it only publishes (the /v1/publish/ API); use a read token to read'
        : 'this is a read token: it never publishes; create a publish token with npm run token -- create --publish NS/TYPE';
    return { ok: false, reason: 'purpose', message, record };
  }
  return { ok: true, record };
}
