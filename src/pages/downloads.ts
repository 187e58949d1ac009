import { readDownloads, WINDOW_DAYS, type DownloadSummary } from '../downloads/read';
import type { PageContext } from './context';
import { html, type Html } from './html';

/**
 * "Downloads in the last 30 days" on the provider, version and module pages:
 * one RPC to the package's counter (src/downloads/), never KV. A counter
 * that cannot be read leaves the page up and says so; a deployment without
 * the DOWNLOADS binding shows nothing.
 */

export type PageDownloads = DownloadSummary | 'unavailable' | null;

/** The package's counts for the pages, never throwing. */
export async function loadDownloads(ctx: PageContext, counter: string): Promise<PageDownloads> {
  try {
    return await readDownloads(ctx.env, counter, WINDOW_DAYS);
  } catch (error) {
    console.error(`download counts of ${counter}: ${(error as Error).message}`);
    return 'unavailable';
  }
}

/** A <dt>/<dd> pair for a facts list: this version's and every version's downloads in the window. */
export function downloadsFact(downloads: PageDownloads, version: string): Html {
  if (downloads === null) return html``;
  if (downloads === 'unavailable') return html`<dt>Downloads</dt><dd class="muted">not available right now</dd>`;
  const mine = downloads.versions[version]?.total ?? 0;
  return html`<dt>Downloads <span class="muted">(last ${downloads.days} days)</span></dt><dd id="downloads"><strong>${count(mine)}</strong> of ${version} · ${count(downloads.total)} of all versions</dd>`;
}

/** This version's downloads for one platform in the window, or '' when counts are not shown. */
export function platformDownloads(downloads: PageDownloads, version: string, platform: string): string {
  if (downloads === null || downloads === 'unavailable') return '';
  return count(downloads.versions[version]?.platforms[platform] ?? 0);
}

const count = (n: number) => n.toLocaleString('en-US');
