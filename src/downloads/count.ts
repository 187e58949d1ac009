import { settings } from '../config';
import type { Env } from '../env';
import type { DownloadCounter, Increment } from './counter';

/**
 * Counting a download in the Worker, after the archive route answered and
 * before the response is returned: edge-cache hits count like R2 reads (the
 * route runs either way), HEAD never counts (so Terraform's HEAD-then-GET
 * counts once), nor does a conditional 304 or a later range of a resumed
 * download; a GET answered 200, or 206 from byte 0, is one download.
 *
 * No KV write, and at most one request to a package's Durable Object
 * (src/downloads/counter.ts) per batch window (DOWNLOAD_BATCH_MS, default
 * 500 ms) per isolate: a download adds one to a counter in the isolate's
 * memory. Only the download that opens a batch registers work after its
 * response (ctx.waitUntil): it sends at once when this isolate sent nothing
 * for the package in the last window, else at the window's end, everything
 * the isolate gathered for the package meanwhile, in one RPC. Every other
 * download of the window costs a Map update: no timer, no promise, no
 * waitUntil (before, each download held its own 500 ms timer in its
 * waitUntil, so every counted request stayed alive half a second).
 * Accuracy: exact, unless an RPC fails or the isolate is evicted between a
 * download and its batch's send — then that batch (at most the isolate's
 * downloads of that package within one window) is lost; a failed RPC is
 * logged with the number lost.
 */

export const BATCH_MS = 500;

/** counter → "version\0platform" → downloads not sent yet. A counter here has an open batch: some request's waitUntil will send it. */
const pending = new Map<string, Map<string, number>>();
/** counter → when this isolate last sent its batch (ms). */
const lastSent = new Map<string, number>();

/** The batch window in ms: DOWNLOAD_BATCH_MS when a number in [0, 10000], else BATCH_MS. */
function batchWindowMs(env: Env): number {
  return settings(env).downloadBatchMs ?? BATCH_MS;
}

/** True when `response` to `request` is one download (see above). */
export function isDownload(request: Request, response: Response): boolean {
  if (request.method !== 'GET') return false;
  if (response.status === 200) return true;
  return response.status === 206 && /^bytes 0-/.test(response.headers.get('content-range') ?? '');
}

/**
 * Counts one download of `version` (and `platform`, '' for a module) of the
 * package counted by the object `counter`. Without a DOWNLOADS binding or an
 * execution context it does nothing. Never throws.
 */
export function countDownload(env: Env, ctx: ExecutionContext | undefined, counter: string, version: string, platform: string): void {
  if (!env.DOWNLOADS || !ctx) return;
  let items = pending.get(counter);
  const batchOpen = items !== undefined;
  if (!items) pending.set(counter, (items = new Map()));
  const item = `${version}\u0000${platform}`;
  items.set(item, (items.get(item) ?? 0) + 1);
  if (batchOpen) return; // the open batch carries it
  const wait = Math.max(0, (lastSent.get(counter) ?? -Infinity) + batchWindowMs(env) - Date.now());
  ctx.waitUntil(send(env.DOWNLOADS, counter, wait));
}

/** Sends `counter`'s batch after `wait` ms, in one RPC; logs (never throws) when the RPC fails. */
async function send(namespace: DurableObjectNamespace<DownloadCounter>, counter: string, wait: number): Promise<void> {
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const items = pending.get(counter);
  pending.delete(counter);
  lastSent.set(counter, Date.now());
  if (lastSent.size > 1024) forgetQuiet();
  if (!items) return;
  const increments: Increment[] = [...items].map(([item, count]) => {
    const [version, platform] = item.split('\u0000') as [string, string];
    return [version, platform, count];
  });
  const day = new Date().toISOString().slice(0, 10);
  try {
    await namespace.get(namespace.idFromName(counter)).add(day, increments);
  } catch (error) {
    const lost = increments.reduce((sum, [, , n]) => sum + n, 0);
    console.error(`download counts: ${lost} downloads of ${counter} were not recorded: ${(error as Error).message}`);
  }
}

/** Drops the send times of packages quiet for over 10 s (longer than any window), so the map stays small. */
function forgetQuiet(): void {
  const before = Date.now() - 10_000;
  for (const [counter, at] of lastSent) if (at < before && !pending.has(counter)) lastSent.delete(counter);
}
