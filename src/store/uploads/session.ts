import { parseActor, type Actor } from '../audit/actor';
import {
  parseUploadMarker,
  uploadExpiryKey,
  uploadMultipartKey,
  uploadOpenKey,
  uploadPrefix,
  uploadSessionKey,
  uploadsExpiryPrefix,
  uploadsOpenPrefix,
} from '../layout';
import { listAllObjectKeys } from '../list';
import type { ModuleDocs } from '../modules/types';
import type { BlobStore } from '../store';

/**
 * An upload session of the publish API: what one client is publishing,
 * created by `POST /v1/publish/providers/…` or `/v1/publish/modules/…`,
 * filled by `PUT /v1/publish/uploads/ID/FILENAME`, ended by
 * `POST /v1/publish/uploads/ID/commit`. Stored in R2 under .uploads/ID/
 * (layout.ts), never served or listed; each session stages its own copies,
 * so concurrent sessions of one version never touch each other's bytes and
 * the commit (under the lease) decides which one wins.
 */

/** A file the client declared and will upload. */
export interface DeclaredFile {
  filename: string;
  size: number;
  /** Hex SHA-256 the client claims; R2 verifies it on put, and a multipart file is hashed at commit. */
  sha256: string;
  contentType: string;
  /** The bytes, base64, when the manifest carried them (a small file: no upload, the commit takes them from here). */
  content?: string;
}

export interface ProviderUpload {
  kind: 'provider';
  type: string;
  version: string;
  protocols: string[];
  /** The archives (one per platform), SHA256SUMS, and the signature when the client signed. */
  files: DeclaredFile[];
  /** h1 the client computed per archive (checked against the server's own at commit when given). */
  h1?: Record<string, string>;
  /** Docs for the version's pages (publish-provider --docs), checked by src/protocol/provider-docs.ts. */
  docs?: import('../../protocol/provider-docs-shape').ProviderDocs;
  /** A re-run restoring a published version's lost release files: `files` are exactly those (src/routes/publish/provider-repair.ts). */
  repair?: true;
}

export interface ModuleUpload {
  kind: 'module';
  name: string;
  system: string;
  version: string;
  format: 'tar.gz' | 'zip';
  /** The one package file. */
  files: [DeclaredFile];
  docs: ModuleDocs;
  /** A re-run restoring a published version's lost package (committed as a publish of the same package: its repair path). */
  repair?: true;
}

export interface UploadSession {
  id: string;
  hostname: string;
  namespace: string;
  /** Who created it: only the same credential's actor may upload to it and commit it. */
  actor: Actor;
  created: string;
  /** ISO time after which the session is refused (its staged files are garbage). */
  expires: string;
  /** Files at least this large are sent in parts of exactly `partSize` bytes (the last one shorter). */
  partSize: number;
  upload: ProviderUpload | ModuleUpload;
}

/** 128 random bits, hex: the session id (not a secret: every request also needs the publishing credential). */
export function newUploadId(): string {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

export const UPLOAD_ID = /^[0-9a-f]{32}$/;

/** The session `id`, or null when there is none (never created, committed and removed, or damaged). */
export async function readUploadSession(blobs: BlobStore, id: string): Promise<UploadSession | null> {
  if (!UPLOAD_ID.test(id)) return null;
  const object = await blobs.get(uploadSessionKey(id));
  if (object === null) return null;
  try {
    const session = JSON.parse(await object.text()) as UploadSession;
    return session.id === id && parseActor(session.actor) !== null ? session : null;
  } catch {
    return null;
  }
}

/** What removing and sweeping uploads needs of R2: deletes of many keys at once, and aborting multipart uploads. */
export type UploadBucket = BlobStore & {
  delete(keys: string | string[]): Promise<void>;
  resumeMultipartUpload(key: string, uploadId: string): { abort(): Promise<void> };
};

/** Open upload sessions one credential may have at once (MAX_OPEN_UPLOADS + 1st start: 429). */
export const MAX_OPEN_UPLOADS = 100;
/** Expired sessions one upload start removes at most (the sweep: a bounded cost on a request that writes anyway). */
export const SWEEP_PER_START = 3;

/**
 * The credential an actor publishes with, as a name for the open-session
 * markers: a publish token by its id; a CI identity by issuer and repository
 * (or subject) — not its token's jti, since a CI job mints as many tokens
 * as it likes; a person by issuer and subject; the operator as one. 32 hex
 * digits of SHA-256 (no claim text in an object name).
 */
export async function credentialKey(actor: Actor): Promise<string> {
  const name =
    actor.kind === 'token'
      ? `token\n${actor.tokenId}`
      : actor.kind === 'ci'
        ? `ci\n${actor.issuer}\n${actor.repository ?? actor.subject}`
        : actor.kind === 'person'
          ? `person\n${actor.issuer}\n${actor.subject}`
          : 'operator';
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(name)));
  return [...digest.subarray(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The open (unexpired, uncommitted) upload sessions of `actor`'s credential
 * at `now`, counted from the names of its markers (one R2 list: the cap is
 * under 1,000), and the soonest of their expiries (ISO) — when one more may start.
 */
export async function openUploads(blobs: BlobStore, actor: Actor, now: number): Promise<{ open: number; soonest: string | null }> {
  const page = await blobs.list({ prefix: uploadsOpenPrefix(await credentialKey(actor)), limit: 1000 });
  const expiries = page.objects
    .map((o) => parseUploadMarker(o.key)?.expiresMs ?? 0)
    .filter((at) => at > now)
    .sort((a, b) => a - b);
  return { open: expiries.length, soonest: expiries.length ? new Date(expiries[0]!).toISOString() : null };
}

/**
 * Stores a new session (created only if absent) and its two markers (the
 * credential's open one, the expiry one the sweep lists). Throws the store's
 * error; a session whose markers failed is still refused after `expires`,
 * and the lifecycle rule removes it.
 */
export async function writeUploadSession(blobs: BlobStore, session: UploadSession): Promise<void> {
  const written = await blobs.put(uploadSessionKey(session.id), JSON.stringify(session), {
    httpMetadata: { contentType: 'application/json' },
    onlyIf: { etagDoesNotMatch: '*' },
  });
  if (!written) throw new Error(`upload session ${session.id} already exists`);
  const expiresMs = Date.parse(session.expires);
  await blobs.put(uploadOpenKey(await credentialKey(session.actor), expiresMs, session.id), '');
  await blobs.put(uploadExpiryKey(expiresMs, session.id), '');
}

/**
 * Deletes everything of session `id` (after its commit, or once expired;
 * best effort, leftovers are never served): multipart uploads in progress
 * aborted, the staged files in one R2 request per 1,000 keys, its markers
 * (when `session` is known), then the session itself — last, so a commit
 * retried after a partial cleanup still finds it.
 */
export async function removeUpload(bucket: UploadBucket, id: string, session?: UploadSession | null): Promise<void> {
  const keys = await listAllObjectKeys(bucket, uploadPrefix(id));
  for (const pointer of keys.filter((key) => key.startsWith(`${uploadPrefix(id)}multipart/`))) {
    const object = await bucket.get(pointer);
    const filename = pointer.slice(`${uploadPrefix(id)}multipart/`.length);
    if (object !== null && pointer === uploadMultipartKey(id, filename)) {
      await bucket
        .resumeMultipartUpload(`${uploadPrefix(id)}files/${filename}`, await object.text())
        .abort()
        .catch(() => {}); // already completed or aborted
    }
  }
  const files = keys.filter((key) => !key.endsWith('session.json'));
  if (session) {
    const expiresMs = Date.parse(session.expires);
    files.push(uploadOpenKey(await credentialKey(session.actor), expiresMs, id), uploadExpiryKey(expiresMs, id));
  }
  for (let i = 0; i < files.length; i += 1000) await bucket.delete(files.slice(i, i + 1000));
  for (const key of keys.filter((key) => key.endsWith('session.json'))) await bucket.delete(key);
}

/**
 * The Worker's own expiry of abandoned uploads (no R2 lifecycle rule
 * needed): lists the expiry markers, oldest expiry first, and removes up
 * to `limit` sessions whose expiry is before `now` — their staged files,
 * parts and markers (removeUpload) — plus the marker of a session already
 * gone. Returns how many it removed. Called at every upload start with
 * SWEEP_PER_START; throws the store's error.
 */
export async function sweepExpiredUploads(bucket: UploadBucket, now: number, limit = SWEEP_PER_START): Promise<number> {
  const page = await bucket.list({ prefix: uploadsExpiryPrefix, limit });
  let removed = 0;
  for (const { key } of page.objects) {
    const marker = parseUploadMarker(key);
    if (marker === null) {
      await bucket.delete(key);
      continue;
    }
    if (marker.expiresMs > now) break; // sorted: the rest expire later
    const session = await readUploadSession(bucket, marker.id);
    await removeUpload(bucket, marker.id, session);
    await bucket.delete(key); // also when the session was gone already (its markers alone were left)
    removed++;
  }
  return removed;
}
