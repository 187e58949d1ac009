import type { KvStore } from './types';

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
