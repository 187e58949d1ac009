import { describeRights, parseScope, tokenRights } from '../../src/access/scope';
import { newToken, tokenId, tokenSha256 } from '../../src/access/tokens';
import { InputError } from '../../src/protocol/errors';
import { deleteTokenRecord, listTokenRecords, writeTokenRecord } from '../../src/store/tokens/write';
import { type TokenPurpose, type TokenRecord } from '../../src/store/tokens/read';
import type { KvStore } from '../../src/store/store';

/**
 * The token commands over any KvStore (local Miniflare state or remote KV):
 * scripts/token.ts parses arguments and prints; these do the work. A token
 * exists in clear only in the return value of createToken.
 */

const UNIT_MS = { h: 3600_000, d: 86_400_000, w: 7 * 86_400_000, y: 365 * 86_400_000 } as const;

/** How long a token lives when `--expires` is not given: a leaked token stops working on its own. */
export const DEFAULT_EXPIRY = '90d';

/**
 * Parses `--expires`: "never" (said explicitly), a duration ("12h", "90d",
 * "4w", "1y") from `now`, or an ISO date/time ("2027-01-31",
 * "2027-01-31T12:00:00Z"); not given, DEFAULT_EXPIRY. Returns the ISO expiry
 * or null for never. Throws InputError for anything else or a time not in the future.
 */
export function parseExpiry(raw: string | undefined, now = Date.now()): string | null {
  if (raw === undefined) return parseExpiry(DEFAULT_EXPIRY, now);
  if (raw === 'never') return null;
  const duration = /^(\d{1,6})([hdwy])$/.exec(raw.trim());
  let at: number;
  if (duration) {
    at = now + Number(duration[1]) * UNIT_MS[duration[2] as keyof typeof UNIT_MS];
  } else if (/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw.trim())) {
    at = Date.parse(raw.trim());
  } else {
    throw new InputError(`--expires "${raw}": use a duration like 12h, 90d, 4w, 1y, a date like 2027-01-31, or "never"`);
  }
  if (!Number.isFinite(at)) throw new InputError(`--expires "${raw}" is not a valid date`);
  if (at <= now) throw new InputError(`--expires "${raw}" is not in the future`);
  return new Date(at).toISOString();
}

export interface CreateOptions {
  /**
   * Scopes as given: for a read token (--namespace, repeatable) "*", NAMESPACE, HOST/NAMESPACE or HOST/*;
   * for a publish token (--publish, repeatable) the packages it may publish, NS/TYPE or NS/NAME/SYSTEM
   * (src/access/scope.ts), or with `namespaceWide` namespaces of this registry ("*": every one).
   */
  scopes: readonly string[];
  /** read (default) or publish. */
  purpose?: TokenPurpose;
  /** A publish token allowed every package of its namespaces (--namespace-wide), said explicitly. */
  namespaceWide?: boolean;
  name?: string;
  /** As parsed by parseExpiry. */
  expires: string | null;
  now?: number;
}

/**
 * Creates a token and stores its record (hash, scopes, packages, name,
 * creation, expiry). Returns the token — shown once, never stored — and its
 * record. Throws InputError when no scope is given or one is invalid: a
 * publish token names packages, or namespaces only with `namespaceWide`.
 */
export async function createToken(kv: KvStore, options: CreateOptions): Promise<{ token: string; record: TokenRecord }> {
  const purpose = options.purpose ?? 'read';
  if (options.scopes.length === 0) {
    throw new InputError(
      purpose === 'publish'
        ? 'give at least one --publish NS/TYPE or NS/NAME/SYSTEM (repeatable: the packages it may publish; --namespace-wide with --publish NS for every package of NS)'
        : 'give at least one --namespace NS (repeatable; "*" for every namespace, HOST/NS for a mirrored upstream one)',
    );
  }
  if (options.namespaceWide && purpose !== 'publish') throw new InputError('--namespace-wide is for publish tokens (--publish NS)');
  const packages = purpose === 'publish' && !options.namespaceWide ? [...new Set(options.scopes.map((raw) => parseScope(raw, 'package', '--publish')))] : null;
  const scopes = packages
    ? [...new Set(packages.map((p) => p.split('/')[0]!))]
    : [...new Set(options.scopes.map((raw) => parseScope(raw, purpose === 'publish' ? 'namespace' : 'read', '--publish')))];
  const name = (options.name ?? '').trim();
  if (name.length > 100 || /[\u0000-\u001f\u007f]/.test(name)) throw new InputError('--name must be at most 100 printable characters');
  const token = newToken();
  const sha256 = tokenSha256(token);
  const record: TokenRecord = {
    id: tokenId(sha256),
    name,
    sha256,
    scopes,
    created: new Date(options.now ?? Date.now()).toISOString(),
    expires: options.expires,
    purpose,
    ...(packages ? { packages } : {}),
    ...(purpose === 'publish' && options.namespaceWide ? { namespaceWide: true as const } : {}),
  };
  await writeTokenRecord(kv, record);
  return { token, record };
}

/** What a token may do, for listings and audit entries: its read scopes, or what it may publish. */
export function describeToken(record: TokenRecord): string {
  return record.purpose === 'publish' ? `publish ${describeRights(tokenRights(record))}` : `scopes ${record.scopes.join(', ')}`;
}

/** Every token record, oldest first. */
export const listTokens = (kv: KvStore): Promise<TokenRecord[]> => listTokenRecords(kv);

/**
 * Revokes the token whose id (or a prefix of it of at least 6 digits) or
 * name is `which`; it is refused everywhere within 60 s. Throws InputError
 * when nothing matches, or when several tokens match (then revoke by id).
 */
export async function revokeToken(kv: KvStore, which: string): Promise<TokenRecord> {
  const wanted = which.trim();
  if (wanted === '') throw new InputError('revoke needs a token id or name (see `npm run token -- list`)');
  const records = await listTokenRecords(kv);
  const byId = records.filter((r) => r.id === wanted.toLowerCase() || (wanted.length >= 6 && r.id.startsWith(wanted.toLowerCase())));
  const matches = byId.length > 0 ? byId : records.filter((r) => r.name === wanted);
  if (matches.length === 0) throw new InputError(`no token has the id or name "${wanted}" (see \`npm run token -- list\`)`);
  if (matches.length > 1) {
    throw new InputError(`${matches.length} tokens match "${wanted}": ${matches.map((r) => r.id).join(', ')}; revoke one by its id`);
  }
  await deleteTokenRecord(kv, matches[0]!.sha256);
  return matches[0]!;
}

/** A table of token records for `list` (no hashes, never tokens). */
export function formatTokenTable(records: readonly TokenRecord[], now = Date.now()): string {
  if (records.length === 0) return 'no tokens';
  const rows = records.map((r) => [
    r.id,
    r.name || '-',
    r.purpose === 'publish'
      ? `publish:${r.namespaceWide ? `NAMESPACE-WIDE ${r.scopes.join(',')}` : (r.packages ?? ['NOTHING (created before per-package rights)']).join(',')}`
      : r.scopes.join(','),
    r.created.slice(0, 19).replace('T', ' '),
    r.expires === null ? 'never' : `${r.expires.slice(0, 19).replace('T', ' ')}${Date.parse(r.expires) <= now ? ' (expired)' : ''}`,
  ]);
  const header = ['ID', 'NAME', 'SCOPES', 'CREATED (UTC)', 'EXPIRES (UTC)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
