import type { Env } from '../env';
import type { DownloadTotals } from './counter';

/**
 * Reading download counts for pages and the JSON route: one RPC to the
 * package's Durable Object (one SQL query per total), no KV.
 */

export const WINDOW_DAYS = 30;

/** Per version (and platform) totals of the last `days` days including today (UTC). */
export interface DownloadSummary {
  days: number;
  since: string;
  total: number;
  versions: Record<string, { total: number; platforms: Record<string, number> }>;
  daily: { day: string; count: number }[];
}

/** The first day of a window of `days` days ending today (UTC). */
export function windowStart(days: number, now = Date.now()): string {
  return new Date(now - (days - 1) * 86_400_000).toISOString().slice(0, 10);
}

/** The counts of `counter` for the last `days` days, or null without a DOWNLOADS binding. Store errors propagate. */
export async function readDownloads(env: Env, counter: string, days = WINDOW_DAYS): Promise<DownloadSummary | null> {
  if (!env.DOWNLOADS) return null;
  const since = windowStart(days);
  const totals: DownloadTotals = await env.DOWNLOADS.get(env.DOWNLOADS.idFromName(counter)).totals(since);
  const versions: DownloadSummary['versions'] = {};
  let total = 0;
  for (const { version, platform, count } of totals.rows) {
    const entry = (versions[version] ??= { total: 0, platforms: {} });
    entry.total += count;
    if (platform) entry.platforms[platform] = (entry.platforms[platform] ?? 0) + count;
    total += count;
  }
  return { days, since, total, versions, daily: totals.daily };
}
