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
      httpMetadata?: { contentType?: string; cacheControl?: string };
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
