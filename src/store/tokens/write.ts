import { tokenKey, tokenPrefix } from '../layout';
import type { KvStore } from '../store';
import { listAllKeys } from '../list';
import { isTokenSha256, parseTokenRecord, type TokenRecord } from './read';
import { forgetTokenRecord } from './cached-read';

// The token script's side of token records: write, list, delete (see ./read.ts for the format).

/** Stores (or replaces) a token record under its hash. */
export async function writeTokenRecord(kv: KvStore, record: TokenRecord): Promise<void> {
  if (!isTokenSha256(record.sha256)) throw new Error('a token record needs the hex SHA-256 of its token');
  await kv.put(tokenKey(record.sha256), JSON.stringify(record));
  forgetTokenRecord(record.sha256);
}

/** Every stored token record, oldest first (follows KV list cursors; skips damaged records). */
export async function listTokenRecords(kv: KvStore): Promise<TokenRecord[]> {
  const records: TokenRecord[] = [];
  for (const name of await listAllKeys(kv, tokenPrefix)) {
    const text = await kv.get(name, 'text');
    const record = text === null ? null : parseTokenRecord(text);
    if (record) records.push(record);
  }
  return records.sort((a, b) => a.created.localeCompare(b.created));
}

/** Deletes the record of the token with this hash: refused at once by this isolate, everywhere within 60 s (cached-read.ts). */
export async function deleteTokenRecord(kv: KvStore, tokenSha256Hex: string): Promise<void> {
  await kv.delete(tokenKey(tokenSha256Hex));
  forgetTokenRecord(tokenSha256Hex); // this isolate's copy (cached-read.ts); other isolates within the 60 s bound
}
