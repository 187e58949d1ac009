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
  /**
   * SHA-256 and size of the SHA256SUMS file and its signature as stored
   * (records written before these were kept lack them).
   */
  shasumsFile?: FileDigest;
  signatureFile?: FileDigest;
}

/** Hex SHA-256 and size of a stored file. */
export interface FileDigest {
  sha256: string;
  size: number;
}
