import type { ProviderAddress } from '../protocol/address';
import type { GpgPublicKey } from '../protocol/providers-v1';

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
  etag: string;
  customMetadata?: Record<string, string>;
}

export interface BlobStore {
  head(key: string): Promise<BlobHead | null>;
  put(
    key: string,
    value: ReadableStream | ArrayBuffer | Uint8Array | string,
    options?: { httpMetadata?: { contentType?: string }; customMetadata?: Record<string, string> },
  ): Promise<unknown>;
}

/** One platform's package within a published version. */
export interface PackageRecord {
  os: string;
  arch: string;
  filename: string;
  /** Hex SHA-256 of the zip (the registry's `shasum`; `zh:` hash). */
  shasum: string;
  /** Go dirhash Hash1 of the zip's contents, "h1:…". */
  h1: string;
  /** Size of the zip in bytes. */
  size: number;
}

/** A public signing key as stored and served in `signing_keys.gpg_public_keys` (the protocol's type, its two fields we use). */
export type SigningKey = Pick<GpgPublicKey, 'key_id' | 'ascii_armor'>;

/**
 * Everything known about one published version; the stored response bodies
 * are all derived from these records.
 */
export interface VersionRecord {
  address: ProviderAddress;
  version: string;
  protocols: string[];
  packages: PackageRecord[];
  shasumsFilename: string;
  shasumsSignatureFilename: string;
  /** The key that signed SHA256SUMS; stays served for this version after rotation. */
  signingKey: SigningKey;
  publishedAt: string;
}
