import { sha256Hex } from '../../protocol/hashes';
import { personRevokedKey, personTokenObjectKey, personTokensPrefix } from '../layout';
import { deleteTokenRecord, writeTokenRecord } from '../tokens/write';
import { type TokenPerson, type TokenRecord } from '../tokens/read';

/**
 * People's tokens: the KV token record (what requests are authenticated
 * against, src/store/tokens/) plus an index in R2 under the person
 * (.people/PERSON/tokens/SHA256, metadata only), so a person's Tokens page
 * and an offboarding are one strongly consistent R2 list instead of reading
 * every token record. The KV record is written first: an index entry
 * without a record is skipped when listed and removed on revoke.
 */

/** The index key of a person: hex SHA-256 of issuer + "\n" + subject (the subject alone is only unique per issuer). */
export function personKey(person: Pick<TokenPerson, 'issuer' | 'subject'>): string {
  return sha256Hex(`${person.issuer}\n${person.subject}`);
}

/** Writes a person's new token record (KV: one write) and its index entry (R2: one write). */
export async function writePersonToken(kv: KVNamespace, blobs: R2Bucket, record: TokenRecord & { person: TokenPerson }): Promise<void> {
  await writeTokenRecord(kv, record);
  await blobs.put(personTokenObjectKey(personKey(record.person), record.sha256), '', {
    customMetadata: { id: record.id, name: record.name, scopes: record.scopes.join(' '), created: record.created, expires: record.expires ?? '' },
  });
}

/** One entry of a person's token list (never the hash in full on a page: `id` is its first 12 digits). */
export interface PersonTokenEntry {
  id: string;
  sha256: string;
  name: string;
  scopes: string[];
  created: string;
  expires: string | null;
}

/** A person's tokens from the R2 index, newest first (one R2 list per 1000 tokens). */
export async function listPersonTokens(blobs: R2Bucket, key: string): Promise<PersonTokenEntry[]> {
  const entries: PersonTokenEntry[] = [];
  let cursor: string | undefined;
  do {
    // `include` is honoured by the runtime (compatibility date ≥ 2022-08-04) though these types omit it.
    const page = await blobs.list({ prefix: personTokensPrefix(key), cursor, include: ['customMetadata'] } as R2ListOptions);
    for (const object of page.objects) {
      const meta = object.customMetadata ?? {};
      const sha256 = object.key.slice(personTokensPrefix(key).length);
      entries.push({
        id: meta.id ?? sha256.slice(0, 12),
        sha256,
        name: meta.name ?? '',
        scopes: (meta.scopes ?? '').split(' ').filter(Boolean),
        created: meta.created ?? '',
        expires: meta.expires || null,
      });
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return entries.sort((a, b) => b.created.localeCompare(a.created));
}

/** Revokes one of a person's tokens: deletes its KV record (refused everywhere within 60 s) and its index entry. */
export async function revokePersonToken(kv: KVNamespace, blobs: R2Bucket, key: string, tokenSha256Hex: string): Promise<void> {
  await deleteTokenRecord(kv, tokenSha256Hex);
  await blobs.delete(personTokenObjectKey(key, tokenSha256Hex));
}

/** Records that every token of the person was revoked at `at` (epoch ms): their page sessions signed in before then end (one R2 write). */
export async function markPersonRevoked(blobs: R2Bucket, key: string, at = Date.now()): Promise<void> {
  await blobs.put(personRevokedKey(key), '', { customMetadata: { at: String(at) } });
}

/**
 * True when an admin revoked all of the person's tokens at or after `issuedMs` (epoch ms): what was issued to
 * them before — a page session, a pending login code — is no longer honoured. One R2 head. The one check of
 * offboarding for person sessions (src/access/person-session.ts) and login codes (src/access/token-endpoint.ts).
 */
export async function revokedSince(blobs: R2Bucket, person: Pick<TokenPerson, 'issuer' | 'subject'>, issuedMs: number): Promise<boolean> {
  const revokedAt = await personRevokedAt(blobs, personKey(person));
  return revokedAt !== null && issuedMs <= revokedAt;
}

/** When the person's tokens were last revoked all at once (epoch ms), or null (one R2 head). */
export async function personRevokedAt(blobs: R2Bucket, key: string): Promise<number | null> {
  const head = await blobs.head(personRevokedKey(key));
  const at = Number(head?.customMetadata?.at);
  return head && Number.isFinite(at) ? at : null;
}
