import { parseJsonObjectOrNull } from '../../protocol/shape';
import { tokenKey } from '../layout';

/**
 * Read tokens as stored in KV, under tokens/<SHA-256 of the token> (see
 * layout.ts). The token itself is never stored: only its hash, its scopes,
 * a name, when it was created and when it expires. The token script writes,
 * lists and deletes records (./write.ts); the Worker reads one by hash (readTokenRecord,
 * uncached) and parses it with parseTokenRecord.
 */
export interface TokenRecord {
  /** Public short identifier: the first 12 hex digits of `sha256`; shown by `token list`, accepted by `token revoke`. */
  id: string;
  /** Free-form label ("ci", "alice"); may be empty. */
  name: string;
  /** Lower-case hex SHA-256 of the token (the same as in the KV key). */
  sha256: string;
  /** Normalised scopes: "*", "NAMESPACE", "HOST/NAMESPACE" or "HOST/*" (see src/access/tokens.ts). */
  scopes: string[];
  /** ISO 8601 time of creation. */
  created: string;
  /** ISO 8601 time after which the token is refused; null = never expires. */
  expires: string | null;
  /**
   * What the token may do: `read` (the registry API, mirror and pages; absent means read, as in records
   * written before this field existed) or `publish` (the write API only, into the namespaces of its scopes;
   * it reads nothing).
   */
  purpose?: TokenPurpose;
  /**
   * A publish token's packages: NS/TYPE and NS/NAME/SYSTEM patterns (src/access/scope.ts). A publish token
   * with neither these nor `namespaceWide` was created before per-package rights and publishes nothing.
   */
  packages?: string[];
  /** A publish token allowed every package of its scopes' namespaces explicitly (`--namespace-wide`). */
  namespaceWide?: true;
  /** The person a token was issued to by sign-in (`terraform login`, the Tokens page); absent for `npm run token` tokens. */
  person?: TokenPerson;
}

/** Who a token belongs to: the identity provider's issuer and subject (stable), and the email at issue time (display only). */
export interface TokenPerson {
  issuer: string;
  subject: string;
  email?: string;
}

export type TokenPurpose = 'read' | 'publish';

const HEX64 = /^[0-9a-f]{64}$/;

/** True for a lower-case hex SHA-256, the form a token record is stored under. */
export const isTokenSha256 = (hex: string): boolean => HEX64.test(hex);

/**
 * Parses a stored record. Returns null (never throws) when the text is not
 * JSON or lacks a field, so a damaged record makes its token invalid (401)
 * rather than failing the request.
 */
export function parseTokenRecord(text: string): TokenRecord | null {
  const r = parseJsonObjectOrNull(text);
  if (r === null) return null;
  if (typeof r.sha256 !== 'string' || !HEX64.test(r.sha256)) return null;
  if (typeof r.id !== 'string' || typeof r.name !== 'string' || typeof r.created !== 'string') return null;
  if (!Array.isArray(r.scopes) || !r.scopes.every((s) => typeof s === 'string')) return null;
  if (r.expires !== null && (typeof r.expires !== 'string' || Number.isNaN(Date.parse(r.expires)))) return null;
  // Absent: a read token written before publish tokens existed. Anything else unknown: damaged (refused).
  if (r.purpose !== undefined && r.purpose !== 'read' && r.purpose !== 'publish') return null;
  const record: TokenRecord = {
    id: r.id,
    name: r.name,
    sha256: r.sha256,
    scopes: r.scopes as string[],
    created: r.created,
    expires: r.expires as string | null,
    purpose: (r.purpose as TokenPurpose | undefined) ?? 'read',
  };
  if (r.packages !== undefined) {
    if (!Array.isArray(r.packages) || !r.packages.every((p) => typeof p === 'string')) return null;
    record.packages = r.packages as string[];
  }
  if (r.namespaceWide !== undefined) {
    if (r.namespaceWide !== true) return null;
    record.namespaceWide = true;
  }
  const person = r.person as Record<string, unknown> | undefined;
  if (person !== undefined) {
    if (typeof person !== 'object' || person === null || typeof person.issuer !== 'string' || typeof person.subject !== 'string') return null;
    if (person.email !== undefined && typeof person.email !== 'string') return null;
    record.person = { issuer: person.issuer, subject: person.subject, ...(person.email !== undefined ? { email: person.email as string } : {}) };
  }
  return record;
}

/** A read-token record by the token's SHA-256 (never cached, so revocation takes effect at once). */
export const readTokenRecord = (kv: KVNamespace, tokenSha256Hex: string) => kv.get(tokenKey(tokenSha256Hex), 'text');
