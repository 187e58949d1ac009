import type { ProviderAddress } from '../protocol/address';
import type { SigningKey } from '../protocol/providers-v1';
import type { PublishedPlatform } from '../protocol/publish-api';

/** One platform's package within a published version: the publish protocol's PublishedPlatform, as stored. */
export type PackageRecord = PublishedPlatform;

/** Defined with the protocol's types (src/protocol/openpgp-signature.ts checks signatures against it). */
export type { SigningKey };

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
  /** The signed statement of this release (src/store/provenance.ts); absent for releases published without one. */
  provenance?: import('./provenance').ProvenanceRef;
}

/** Hex SHA-256 and size of a stored file. */
export interface FileDigest {
  sha256: string;
  size: number;
}
