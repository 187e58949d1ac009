import type { KvStore } from './store';

/**
 * Writes of KV keys that many writers rewrite (version lists, page data, the
 * catalogue's KV copy, module lists, a mirrored version's documents). KV
 * accepts at most one write a second to the same key; a faster write fails
 * (the Workers binding throws "KV PUT failed: 429 Too Many Requests", the
 * REST API answers 429). Such a refused write is retried with backoff; a
 * writer whose body is already superseded (a newer body's writer will write
 * the key) drops out instead, so a burst of publishes writes the shared key
 * about once a second and the newest body last.
 */

/** Retries after a refused write: about 1, 2, 4 and 8 s (each plus up to 0.5 s of jitter), then the error is thrown. */
export const KV_WRITE_BACKOFF_MS = [1000, 2000, 4000, 8000] as const;

/** True for KV's refusal of a second write to a key within a second (binding or REST: a 429). */
export function isKvRateLimited(error: unknown): boolean {
  return error instanceof Error && /\b429\b|too many requests/i.test(error.message);
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface HotWriteOptions {
  /** Asked before each retry: true when a newer body exists whose writer writes the key (this write is then dropped). */
  superseded?: () => Promise<boolean>;
  /** For tests: waits `ms`. */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Puts `body` under `key`, retrying a write KV refused for its one-write-a-
 * second rule (KV_WRITE_BACKOFF_MS). Resolves true when written, false when
 * dropped as superseded. Rejects at once with any other error, and with
 * KV's refusal after the last retry.
 */
export async function putHotKey(kv: KvStore, key: string, body: string, options: HotWriteOptions = {}): Promise<boolean> {
  const sleep = options.sleep ?? defaultSleep;
  for (let attempt = 0; ; attempt++) {
    try {
      await kv.put(key, body);
      return true;
    } catch (error) {
      const wait = KV_WRITE_BACKOFF_MS[attempt];
      if (!isKvRateLimited(error) || wait === undefined) throw error;
      await sleep(wait + Math.floor(Math.random() * 500));
      if (await options.superseded?.()) return false;
    }
  }
}
