import type { BlobStore, KvStore } from './store';

/**
 * Every KV key name under `prefix`, following list cursors to the end (KV
 * returns at most 1,000 names per call). Rejects with the store's error when
 * a list call fails.
 */
export async function listAllKeys(kv: KvStore, prefix: string): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await kv.list({ prefix, ...(cursor ? { cursor } : {}) });
    names.push(...page.keys.map((k) => k.name));
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  return names;
}

/** Every R2 object key under `prefix`, following list cursors (R2 lists are strongly consistent). */
export async function listAllObjectKeys(blobs: BlobStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await blobs.list({ prefix, ...(cursor ? { cursor } : {}) });
    keys.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return keys;
}
