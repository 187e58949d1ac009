import type { ProviderAddress } from '../../protocol/address';
import { shasumsFilename, shasumsSignatureFilename } from '../../protocol/release-files';
import type { FileDigest, PackageRecord, VersionRecord } from '../types';

/**
 * The version record a publish starts from, the same for the publish CLI
 * and the Worker's publish API: the release's own file names, no signing key
 * yet (chosen under the lease), published now. Never throws.
 */
export function draftVersionRecord(
  address: ProviderAddress,
  version: string,
  protocols: string[],
  packages: PackageRecord[],
  shasumsFile: FileDigest,
): VersionRecord {
  return {
    address,
    version,
    protocols,
    packages,
    shasumsFilename: shasumsFilename(address.type, version),
    shasumsSignatureFilename: shasumsSignatureFilename(address.type, version),
    signingKey: { key_id: '', ascii_armor: '' },
    publishedAt: new Date().toISOString(),
    shasumsFile,
  };
}
