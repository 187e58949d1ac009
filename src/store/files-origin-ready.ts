import { filesOriginReadyKey } from './layout';
import type { KvStore } from './store-types';

/**
 * PUBLIC_DOCUMENTS=r2's switch-over (src/store/static-documents.ts). From the deploy that turns the setting on, every
 * writer makes the static copies, but the files origin serves nothing until the operator has attached the domain to
 * the bucket, and lists nothing published before until the backfill ran. So the Worker names FILES_ORIGIN — in
 * discovery's providers.v1 and in the release-file URLs of the download documents and VERSION.json it serves — only
 * once `npm run static-documents` wrote the copies and checked the domain (it serves the bucket, refuses its private
 * objects): that check writes this marker, the origin it checked. Until then the Worker answers as without the
 * setting, so what a client is sent to installs at every step.
 */

/** How long an isolate keeps "not checked yet" before it reads the marker again. */
export const FILES_ORIGIN_RECHECK_MS = 60_000;

/** The marker's value (JSON). */
interface ReadyMarker {
  files_origin: string;
  checked_at: string;
}

/** Writes the marker: `filesOrigin` passed the check (`npm run static-documents`). */
export async function markFilesOriginReady(kv: KvStore, filesOrigin: string, now = new Date()): Promise<void> {
  const marker: ReadyMarker = { files_origin: filesOrigin, checked_at: now.toISOString() };
  await kv.put(filesOriginReadyKey, JSON.stringify(marker));
}

// Per isolate, per files origin: ready (kept for the isolate's life) or not, and until when "not" is trusted.
const known = new Map<string, { ready: boolean; until: number }>();
const reading = new Map<string, Promise<boolean>>();

/**
 * Whether the marker names `filesOrigin`: synchronous when the isolate knows (ready: for good; not ready: for
 * FILES_ORIGIN_RECHECK_MS), else one KV read shared by the requests that ask meanwhile. So an isolate reads the
 * marker once when ready, and at most once a FILES_ORIGIN_RECHECK_MS before. Never rejects: a failed read counts as
 * not ready (the Worker serves, which always installs) until the next recheck.
 */
export function filesOriginReady(kv: KvStore, filesOrigin: string): boolean | Promise<boolean> {
  const hit = known.get(filesOrigin);
  if (hit && (hit.ready || Date.now() < hit.until)) return hit.ready;
  let pending = reading.get(filesOrigin);
  if (!pending) {
    pending = markerNames(kv, filesOrigin).then((ready) => {
      known.set(filesOrigin, { ready, until: Date.now() + FILES_ORIGIN_RECHECK_MS });
      reading.delete(filesOrigin);
      return ready;
    });
    reading.set(filesOrigin, pending);
  }
  return pending;
}

/** One read of the marker: whether it names `filesOrigin`; false when absent, unreadable or not JSON. */
async function markerNames(kv: KvStore, filesOrigin: string): Promise<boolean> {
  try {
    const text = await kv.get(filesOriginReadyKey, 'text');
    return text !== null && (JSON.parse(text) as Partial<ReadyMarker>).files_origin === filesOrigin;
  } catch {
    return false;
  }
}

/** Forgets what the isolate knows of the marker: what a fresh isolate sees (for tests). */
export function forgetFilesOriginReady(): void {
  known.clear();
}
