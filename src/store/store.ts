import type { Env } from '../env';
import { ConfigError } from '../protocol/errors';
import { parsePublicDocuments, withStaticDocuments, type PublicDocuments, type PublicDocumentsVars } from './static-documents';
import type { BlobStore, KvStore, Store } from './store-types';

// The store's interfaces live in ./store-types.ts (so ./static-documents.ts can use them without an import cycle).
export type { BlobHead, BlobStore, BlobWriteCondition, KvStore, Store } from './store-types';

/**
 * The Store over the Worker's bindings: the one place the Worker builds it
 * (and the one cast from the runtime's binding types, which declare more
 * overloads, to the subset in ./store-types.ts). With PUBLIC_DOCUMENTS=r2 its KV writer
 * also writes the public static copies (withStaticDocuments; the setting
 * parsed once per Env object). Never throws: a broken PUBLIC_DOCUMENTS
 * setting throws its ConfigError at the first write of a public document.
 */
export function storeFromEnv(env: Pick<Env, 'REGISTRY_KV' | 'REGISTRY_R2'> & PublicDocumentsVars): Store {
  return withStaticDocuments({ kv: env.REGISTRY_KV as unknown as KvStore, blobs: env.REGISTRY_R2 as unknown as BlobStore }, publicDocumentsOf(env));
}

const parsedDocuments = new WeakMap<object, PublicDocuments | ConfigError | null>();

/** parsePublicDocuments of `env`, memoised per Env object; its ConfigError returned, not thrown. */
function publicDocumentsOf(env: PublicDocumentsVars): PublicDocuments | ConfigError | null {
  let result = parsedDocuments.get(env);
  if (result === undefined) {
    try {
      result = parsePublicDocuments(env);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      result = error;
    }
    parsedDocuments.set(env, result);
  }
  return result;
}
