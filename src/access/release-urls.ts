import type { Env } from '../env';
import { type Settings, settings } from '../config';
import { withFilesOriginUrls, type PublicDocuments } from '../store/static-documents';
import { filesOriginReady } from '../store/files-origin-ready';
import type { KvStore } from '../store/store';
import { DocumentCache } from '../store/document-cache';
import { StoredDocument } from '../store/stored-body';
import { signReleaseUrls, signingWindow } from './signed-urls';
import { withPresignedR2Urls } from './r2-urls';

/**
 * Rewriting the release-file URLs of a stored body as it is served. Stored
 * bodies carry path-absolute URLs ("/v1/archives/…"), so one stored document
 * serves any hostname; these functions sign them (private mode) and make them
 * absolute on ARCHIVE_BASE_URL (when set) or on the request's origin.
 */

/**
 * `body` with every "/v1/archives/… URL made absolute on ARCHIVE_BASE_URL;
 * unchanged when it is not set. A plain string replacement suffices because
 * only URL values start with that quote.
 */
export function withArchiveBase(body: string, env: Env): string {
  const base = settings(env).archiveBaseUrl;
  return base === '' ? body : body.replaceAll('"/v1/archives/', `"${base}/v1/archives/`);
}

/**
 * PUBLIC_DOCUMENTS=r2's setting as served: in public mode, once `npm run static-documents` checked FILES_ORIGIN (its
 * marker, src/store/files-origin-ready.ts: read once per isolate when there, at most once a minute before); null
 * otherwise — private mode never uses it, and until the check passed the Worker answers as without the setting, so
 * no client is sent to a files origin that does not serve yet. Synchronous when the isolate knows. Throws the
 * setting's ConfigError while it is broken.
 */
export function servedPublicDocuments(env: Env): PublicDocuments | null | Promise<PublicDocuments | null> {
  const config = settings(env);
  const documents = config.access === 'public' ? config.publicDocuments : null;
  if (documents === null) return null;
  const ready = filesOriginReady(env.REGISTRY_KV as unknown as KvStore, documents.filesOrigin);
  return typeof ready === 'boolean' ? (ready ? documents : null) : ready.then((yes) => (yes ? documents : null));
}

/**
 * The release-file URLs of a stored body as served. With PUBLIC_DOCUMENTS=r2 (public mode, once FILES_ORIGIN passed
 * its check: servedPublicDocuments) each is absolute on FILES_ORIGIN, the bucket's public custom domain
 * (withFilesOriginUrls: the bytes of the document's static copy).
 * With RELEASE_FILES=r2
 * (either mode) each is a presigned R2 URL valid SIGNED_URL_MINUTES from the
 * start of `now`'s signing window (src/access/r2-urls.ts). Otherwise: in private mode each is
 * signed (signReleaseUrls: ?expires=…&signature=…, signed at the start of
 * `now`'s signing window, see signingWindow) and then, like in public mode,
 * made absolute on ARCHIVE_BASE_URL when set. Public mode stays synchronous
 * (once the isolate knows PUBLIC_DOCUMENTS's marker) and returns withArchiveBase's result. Throws ConfigError (500) in private
 * mode when URL_SIGNING_SECRET is not set.
 */
export function withReleaseUrls(body: string, env: Env, now = Date.now()): string | Promise<string> {
  const documents = servedPublicDocuments(env);
  if (documents instanceof Promise) return documents.then((served) => releaseUrlsAs(body, env, served, now));
  return releaseUrlsAs(body, env, documents, now);
}

/** withReleaseUrls with PUBLIC_DOCUMENTS's setting as served (servedPublicDocuments) given. */
function releaseUrlsAs(body: string, env: Env, documents: PublicDocuments | null, now: number): string | Promise<string> {
  const config = settings(env);
  if (documents) return withFilesOriginUrls(body, documents);
  if (config.r2Files) return withPresignedR2Urls(body, config.r2Files, signingWindow(config, now).signedAt, config.signedUrlMinutes * 60);
  if (config.access === 'public') return withArchiveBase(body, env);
  return signReleaseUrls(body, config, signingWindow(config, now).signedAt).then((signed) => withArchiveBase(signed, env));
}

/**
 * A providers.v1 download document's release-file URLs as served: as
 * withReleaseUrls, then — when ARCHIVE_BASE_URL is not set — absolute on
 * `origin` (the scheme and host the request came to). The protocol allows a
 * relative download_url, and Terraform and OpenTofu resolve all three URLs
 * against the document's URL, but Renovate's terraform-provider datasource
 * fetches download_url and shasums_url exactly as given and cannot use a
 * path-absolute one ("cannot parse url": no lock-file hashes). Absolute URLs
 * work for every client.
 */
export async function withAbsoluteReleaseUrls(body: string, env: Env, origin: string, now = Date.now()): Promise<string> {
  return (await withReleaseUrls(body, env, now)).replaceAll('"/v1/archives/', `"${origin}/v1/archives/`);
}

/** A served variant: the text as sent, for one stored document under the settings that rewrote it. */
class ServedVariant {
  constructor(
    readonly source: StoredDocument,
    readonly settingsKey: string,
    readonly document: StoredDocument,
  ) {}

  /** The rewritten text and its gzip, plus the source's text, which this entry keeps alive too (counted high, never low). */
  get cacheBytes(): number {
    return this.document === this.source ? 0 : this.document.cacheBytes + this.source.text.length * 2;
  }
}

// Rewritten documents, per stored document × origin × signing window (16 MiB, least recently used evicted).
const variants = new DocumentCache<ServedVariant>(16 * 1024 * 1024);

/** The isolate's served-variant cache figures (for tests and the bench). */
export const servedVariantStats = () => variants.stats();

// The URL-shaping settings of each Settings object (one per Env: they never change under it), joined once.
const settingsKeys = new WeakMap<Settings, string>();

/** What a served variant depends on besides its document, origin and signing window: the settings that shape its URLs. */
function urlSettingsKey(config: Settings, documents: PublicDocuments | null, signed: boolean): string {
  let key = settingsKeys.get(config);
  if (key === undefined) {
    const r2 = config.r2Files;
    key = [
      config.access,
      config.archiveBaseUrl,
      documents?.filesOrigin ?? '',
      ...(signed ? [config.signedUrlMinutes, config.signingSecret] : []),
      ...(r2 ? Object.values(r2) : []),
    ].join('\n');
    settingsKeys.set(config, key);
  }
  return key;
}

/**
 * `document` (a stored body as the isolate's document cache holds it) as
 * served: its release-file URLs rewritten by withAbsoluteReleaseUrls on
 * `origin`, or by withReleaseUrls when `origin` is null, as a StoredDocument
 * of its own, so its gzip is computed once and kept with it. `key` names the
 * stored document (the request's path will do). The result is kept in the
 * isolate per (key, origin) in a byte-bounded LRU — with signed or presigned
 * URLs only until the signing window ends — and reused only while `document` is the
 * very object it was made from and the settings that shape the URLs are the
 * same, so a re-read or changed document is rewritten again. Returns
 * `document` itself when the rewrite changes nothing. Throws ConfigError as
 * withReleaseUrls does.
 */
export async function servedDocument(document: StoredDocument, env: Env, key: string, origin: string | null, now = Date.now()): Promise<StoredDocument> {
  const config = settings(env);
  const documents = await servedPublicDocuments(env);
  const signed = documents === null && (config.access === 'private' || config.r2Files !== null);
  const window = signed ? signingWindow(config, now) : null;
  const cacheKey = `${origin ?? ''}\n${key}\n${window?.signedAt ?? ''}`;
  const settingsKey = urlSettingsKey(config, documents, signed);
  const hit = variants.get(cacheKey, now);
  if (hit && hit.source === document && hit.settingsKey === settingsKey) return hit.document;
  const text = origin === null ? await withReleaseUrls(document.text, env, now) : await withAbsoluteReleaseUrls(document.text, env, origin, now);
  const served = text === document.text ? document : new StoredDocument(text);
  variants.set(cacheKey, new ServedVariant(document, settingsKey, served), window ? window.until - now : Number.POSITIVE_INFINITY, now);
  return served;
}

/** Forgets every served variant: what a fresh isolate sees (for tests and the bench). */
export function forgetServedVariants(): void {
  variants.clear();
}
