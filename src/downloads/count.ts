import type { Env } from '../env';
import type { Increment } from './counter';

/**
 * Counting a download in the Worker, after the archive route answered and
 * before the response is returned: edge-cache hits count like R2 reads (the
 * route runs either way), HEAD never counts (so Terraform's HEAD-then-GET
 * counts once), nor does a conditional 304 or a later range of a resumed
 * download; a GET answered 200, or 206 from byte 0, is one download.
 *
 * No KV write, and not one request per download: increments wait in the
 * isolate for BATCH_MS, and the first request of a window sends everything
 * the isolate gathered for that package in one RPC to its Durable Object
 * (src/downloads/counter.ts), inside ctx.waitUntil (after the response;
 * never a promise shared between requests, which workerd refuses). A
 * request whose increment another request already sent sends nothing.
 * Accuracy: exact, unless an RPC fails — then that batch (at most the
 * isolate's downloads of that package within BATCH_MS) is lost and logged.
 */

export const BATCH_MS = 500;

const pending = new Map<string, Map<string, number>>();

/** True when `response` to `request` is one download (see above). */
export function isDownload(request: Request, response: Response): boolean {
  if (request.method !== 'GET') return false;
  if (response.status === 200) return true;
  return response.status === 206 && /^bytes 0-/.test(response.headers.get('content-range') ?? '');
}

/**
 * Counts one download of `version` (and `platform`, '' for a module) of the
 * package counted by the object `counter`. Without a DOWNLOADS binding or an
 * execution context it does nothing.
 */
export function countDownload(env: Env, ctx: ExecutionContext | undefined, counter: string, version: string, platform: string): void {
  if (!env.DOWNLOADS || !ctx) return;
  const items = pending.get(counter) ?? new Map<string, number>();
  const item = `${version}\u0000${platform}`;
  items.set(item, (items.get(item) ?? 0) + 1);
  pending.set(counter, items);
  ctx.waitUntil(flushAfter(env.DOWNLOADS, counter));
}

async function flushAfter(namespace: DurableObjectNamespace<import('./counter').DownloadCounter>, counter: string): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, BATCH_MS));
  const items = pending.get(counter);
  if (!items || items.size === 0) return; // another request of this isolate sent it
  pending.delete(counter);
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
