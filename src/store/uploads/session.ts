import { parseActor, type Actor } from '../audit/actor';
import { uploadPrefix, uploadSessionKey } from '../layout';
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

/** Stores a new session (created only if absent). */
export async function writeUploadSession(blobs: BlobStore, session: UploadSession): Promise<void> {
  const written = await blobs.put(uploadSessionKey(session.id), JSON.stringify(session), {
    httpMetadata: { contentType: 'application/json' },
    onlyIf: { etagDoesNotMatch: '*' },
  });
  if (!written) throw new Error(`upload session ${session.id} already exists`);
}

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

/**
 * Deletes everything staged for session `id` (after its commit; best effort, leftovers are never served):
 * the staged files in one R2 request (the binding deletes up to 1,000 keys at once), then the session.
 */
export async function removeUpload(blobs: BlobStore & { delete(keys: string | string[]): Promise<void> }, id: string): Promise<void> {
  const keys = await listAllObjectKeys(blobs, uploadPrefix(id));
  // The session last: a commit retried after a partial cleanup still finds it.
  const files = keys.filter((key) => !key.endsWith('session.json'));
  for (let i = 0; i < files.length; i += 1000) await blobs.delete(files.slice(i, i + 1000));
  for (const key of keys.filter((key) => key.endsWith('session.json'))) await blobs.delete(key);
}
