import type { Env } from '../env';

/**
 * The subset of the Workers KV and R2 binding APIs the store uses. The real
 * bindings (in the Worker), Miniflare's (local state for the scripts) and the
 * scripts' --remote adapters all satisfy these.
 */
export interface KvStore {
  get(key: string, type: 'text'): Promise<string | null>;
  put(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  list(options: { prefix: string; cursor?: string; limit?: number }): Promise<{
    keys: { name: string }[];
    list_complete: boolean;
    cursor?: string;
  }>;
}

export interface BlobHead {
  size: number;
  /** The object's etag as the R2 binding reports it (unquoted). */
  etag: string;
  customMetadata?: Record<string, string>;
}

/** Conditions of a write, as the R2 binding's `onlyIf` (S3: If-Match / If-None-Match). */
export interface BlobWriteCondition {
  /** Write only when the stored object's etag is this one. */
  etagMatches?: string;
  /** `'*'`: write only when no object is stored under the key. */
  etagDoesNotMatch?: string;
}

/**
 * The subset of the R2 binding the store uses. R2 is strongly consistent and
 * its conditional writes are atomic, which is what leases and version records
 * (the sources of truth for list rebuilds) rely on.
 */
export interface BlobStore {
  head(key: string): Promise<BlobHead | null>;
  get(key: string): Promise<(BlobHead & { text(): Promise<string> }) | null>;
  /** Resolves with the written object, or null when `onlyIf` failed (nothing written). */
  put(
    key: string,
    value: ReadableStream | ArrayBuffer | Uint8Array | string,
    options?: {
      httpMetadata?: { contentType?: string };
      customMetadata?: Record<string, string>;
      onlyIf?: BlobWriteCondition;
    },
  ): Promise<{ etag: string } | null>;
  list(options: { prefix: string; cursor?: string; limit?: number }): Promise<{
    objects: { key: string }[];
    truncated: boolean;
    cursor?: string;
  }>;
  delete(key: string): Promise<void>;
}

/**
 * The registry's storage as every store function takes it: KV (the documents
 * the Worker serves, eventually consistent) and R2 (archives, version records,
 * leases; strongly consistent). Both are required, so no code path can fall
 * back to reading only the eventually consistent KV copy.
 */
export interface Store {
  kv: KvStore;
  blobs: BlobStore;
}

/**
 * The Store over the Worker's bindings: the one place the Worker builds it
 * (and the one cast from the runtime's binding types, which declare more
 * overloads, to the subset above). Never throws.
 */
export function storeFromEnv(env: Pick<Env, 'REGISTRY_KV' | 'REGISTRY_R2'>): Store {
  return { kv: env.REGISTRY_KV as unknown as KvStore, blobs: env.REGISTRY_R2 as unknown as BlobStore };
}
