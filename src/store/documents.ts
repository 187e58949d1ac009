import { sortVersions } from '../protocol/version';
import { zhHash } from '../protocol/hashes';
import { releaseFilePath } from './layout';
import type { PackageRecord, VersionRecord } from './types';

/**
 * Builders of the response bodies stored in KV. Pure functions of version
 * records: the publish step calls them, the Worker serves their output as is.
 * Release-file URLs are path-absolute (see releaseFilePath).
 */

/** providers.v1 "list available versions": every version, ascending. */
export function versionsDocument(records: readonly VersionRecord[]): string {
  const byVersion = new Map(records.map((record) => [record.version, record]));
  return JSON.stringify({
    versions: sortVersions([...byVersion.keys()]).map((version) => {
      const record = byVersion.get(version)!;
      return {
        version,
        protocols: record.protocols,
        platforms: record.packages.map(({ os, arch }) => ({ os, arch })),
      };
    }),
  });
}

/** providers.v1 "find a provider package" for one platform, with OpenTofu's `packages` for every platform. */
export function downloadDocument(record: VersionRecord, pkg: PackageRecord): string {
  const file = (filename: string) => releaseFilePath(record.address, record.version, filename);
  return JSON.stringify({
    protocols: record.protocols,
    os: pkg.os,
    arch: pkg.arch,
    filename: pkg.filename,
    download_url: file(pkg.filename),
    shasums_url: file(record.shasumsFilename),
    shasums_signature_url: file(record.shasumsSignatureFilename),
    shasum: pkg.shasum,
    signing_keys: { gpg_public_keys: [record.signingKey] },
    packages: Object.fromEntries(
      record.packages.map((p) => [`${p.os}_${p.arch}`, { hashes: packageHashes(p), package_size: p.size }]),
    ),
  });
}

/** Network mirror "list available versions". */
export function mirrorIndexDocument(records: readonly VersionRecord[]): string {
  return JSON.stringify({
    versions: Object.fromEntries(sortVersions(records.map((record) => record.version)).map((v) => [v, {}])),
  });
}

/** Network mirror "list available installation packages" for one version. */
export function mirrorVersionDocument(record: VersionRecord): string {
  return JSON.stringify({
    archives: Object.fromEntries(
      record.packages.map((p) => [
        `${p.os}_${p.arch}`,
        { url: releaseFilePath(record.address, record.version, p.filename), hashes: [p.h1, zhHash(p.shasum)] },
      ]),
    ),
  });
}

/** The lock-file hashes of one package: zh (the archive) then h1 (its contents). */
export function packageHashes(pkg: PackageRecord): string[] {
  return [zhHash(pkg.shasum), pkg.h1];
}
