import type { BlobStore } from './types';

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
