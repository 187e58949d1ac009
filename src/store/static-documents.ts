import { ConfigError } from '../protocol/errors';
import { staticDocumentKey } from './layout';
import type { BlobStore, KvStore, Store } from './store-types';

/**
 * Public metadata straight from R2 (PUBLIC_DOCUMENTS = "r2", public mode only):
 * every providers.v1 and network-mirror document the Worker serves from KV is
 * also written as a static object of the R2 bucket, under the same path the
 * Worker serves it at (with the hostname: staticDocumentKey), so that the
 * bucket's public custom domain (FILES_ORIGIN) answers a `terraform init`
 * without the Worker: discovery points providers.v1 at
 * FILES_ORIGIN/v1/providers/HOST/, a network mirror is configured as
 * FILES_ORIGIN/v1/mirror/, and the download documents and VERSION.json name
 * the release files on FILES_ORIGIN too (their object keys: HOST/NS/TYPE/VERSION/FILE).
 *
 * The one place the copies are made is the store's KV writer (withStaticDocuments):
 * every put of such a KV key is followed by the put of its static copy, and every
 * delete by the copy's delete, so every way in — publish, lifecycle change, mirror
 * sync, import, pull-through, removal, a list repair — writes them, in the order
 * the KV documents are written (a version's download documents before the list
 * naming it; a withdrawn version leaves the lists, its download documents stay,
 * as the Worker keeps serving them). The KV documents are unchanged.
 */

/** PUBLIC_DOCUMENTS=r2's one setting: the public custom domain of the bucket, "https://files.example.com" (no trailing slash, no path). */
export interface PublicDocuments {
  filesOrigin: string;
}

/**
 * Cache-Control of every static copy: a cache (Cloudflare's in front of the custom domain, a proxy, the client)
 * may keep it but must revalidate it (ETag / If-None-Match, answered by R2) before every use, so a version list is
 * current from the first second after a publish, as the Worker's is within INDEX_CACHE_SECONDS.
 */
export const STATIC_DOCUMENT_CACHE_CONTROL = 'no-cache';

/** The variables PUBLIC_DOCUMENTS reads. */
export interface PublicDocumentsVars {
  ACCESS?: string;
  PUBLIC_DOCUMENTS?: string;
  FILES_ORIGIN?: string;
}

/**
 * PUBLIC_DOCUMENTS: unset or "worker" → null (documents from the Worker only, the default); "r2" → the setting.
 * Throws ConfigError naming the fix when PUBLIC_DOCUMENTS is anything else, when ACCESS is not "public" (in private
 * mode every metadata request needs its token checked, which a static object cannot do), or when FILES_ORIGIN is
 * missing, not https (http only on a loopback host, for local tests) or has a path, query or credentials.
 */
export function parsePublicDocuments(vars: PublicDocumentsVars): PublicDocuments | null {
  const mode = vars.PUBLIC_DOCUMENTS ?? '';
  if (mode === '' || mode === 'worker') return null;
  if (mode !== 'r2') throw new ConfigError(`PUBLIC_DOCUMENTS is "${mode}"; it is "worker" (the default) or "r2"`);
  if (vars.ACCESS !== 'public') {
    throw new ConfigError(
      'PUBLIC_DOCUMENTS=r2 needs ACCESS = "public": in private mode every metadata request needs its read token checked by the Worker: for a public registry set ACCESS = "public" (the vars of the environment in wrangler.toml), else remove PUBLIC_DOCUMENTS',
    );
  }
  const raw = vars.FILES_ORIGIN ?? '';
  if (raw === '') throw new ConfigError('PUBLIC_DOCUMENTS=r2 needs FILES_ORIGIN, the bucket\'s public custom domain ("https://files.example.com")');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`FILES_ORIGIN "${raw}" is not a URL; it is the bucket's public custom domain, "https://files.example.com"`);
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) throw new ConfigError(`FILES_ORIGIN "${raw}" must be https`);
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new ConfigError(`FILES_ORIGIN "${raw}" must be an origin only, without path, query or credentials ("${url.origin}")`);
  }
  return { filesOrigin: url.origin };
}

/** The providers.v1 base URL of `hostname` on the files origin (discovery's absolute service URL). */
export function staticProvidersBase(documents: PublicDocuments, hostname: string): string {
  return `${documents.filesOrigin}/v1/providers/${hostname}/`;
}

/** The network mirror base URL on the files origin (a client's `network_mirror { url = … }`). */
export function staticMirrorBase(documents: PublicDocuments): string {
  return `${documents.filesOrigin}/v1/mirror/`;
}

/**
 * A stored document's release-file URLs ("/v1/archives/HOST/NS/TYPE/VERSION/FILE", path-absolute) made absolute on
 * the files origin, where the object HOST/NS/TYPE/VERSION/FILE is served. Other bytes are kept; module package
 * URLs ("/v1/module-archives/…") are not touched (modules stay on the Worker). A plain string replacement
 * suffices because only URL values start with that quote.
 */
export function withFilesOriginUrls(body: string, documents: PublicDocuments): string {
  return body.replaceAll('"/v1/archives/', `"${documents.filesOrigin}/`);
}

/** The bytes of the static copy of the KV document `body` (the download documents' and VERSION.json's URLs on the files origin). */
export function staticDocumentBody(body: string, documents: PublicDocuments): string {
  return withFilesOriginUrls(body, documents);
}

/** Writes the static copy of KV document `key` (no-op for a key that has none). */
async function putStaticCopy(blobs: BlobStore, documents: PublicDocuments, key: string, body: string): Promise<void> {
  const objectKey = staticDocumentKey(key);
  if (objectKey === null) return;
  await blobs.put(objectKey, staticDocumentBody(body, documents), {
    httpMetadata: { contentType: 'application/json', cacheControl: STATIC_DOCUMENT_CACHE_CONTROL },
  });
}

/**
 * `store` whose KV writer also writes the static copies (see the top of this file): a put of a providers.v1 or
 * mirror document resolves once the KV put and then the copy's R2 put are done; a delete deletes the KV key and then
 * the copy. `documents` null: `store` itself. `documents` a ConfigError (the setting is broken): every put or delete
 * of such a key throws it before writing anything (a publish refuses with 503 naming the setting rather than leave
 * the static lists behind). Other properties of `store` (a script's handle) are kept.
 */
export function withStaticDocuments<S extends Store>(store: S, documents: PublicDocuments | ConfigError | null): S {
  if (documents === null) return store;
  const { kv, blobs } = store;
  const usable = (key: string): PublicDocuments | null => {
    if (staticDocumentKey(key) === null) return null;
    if (documents instanceof ConfigError) throw documents;
    return documents;
  };
  const writer: KvStore = {
    get: (key, type) => kv.get(key, type),
    list: (options) => kv.list(options),
    async put(key, value) {
      const copy = usable(key);
      await kv.put(key, value);
      if (copy) await putStaticCopy(blobs, copy, key, value);
    },
    async delete(key) {
      const copy = usable(key);
      await kv.delete(key);
      if (copy) await blobs.delete(staticDocumentKey(key)!);
    },
  };
  return { ...store, kv: writer };
}

/**
 * Writes the static copy of every providers.v1 and mirror document stored in KV (all hostnames): what turning
 * PUBLIC_DOCUMENTS on for a registry that already has versions needs once (`npm run static-documents`); also a
 * repair. Lists KV's `v1/providers/` and `v1/mirror/` (eventually consistent: a document written within the last
 * minute elsewhere may be missed, and is then written by its own writer). Returns the number of copies written.
 * `progress` is told each key.
 */
export async function writeAllStaticCopies(store: Store, documents: PublicDocuments, progress: (key: string) => void = () => {}): Promise<number> {
  let written = 0;
  for (const prefix of ['v1/providers/', 'v1/mirror/']) {
    let cursor: string | undefined;
    do {
      const page = await store.kv.list({ prefix, ...(cursor ? { cursor } : {}) });
      for (const { name } of page.keys) {
        if (staticDocumentKey(name) === null) continue;
        const body = await store.kv.get(name, 'text');
        if (body === null) continue;
        progress(name);
        await putStaticCopy(store.blobs, documents, name, body);
        written++;
      }
      cursor = page.list_complete ? undefined : page.cursor;
    } while (cursor);
  }
  return written;
}
