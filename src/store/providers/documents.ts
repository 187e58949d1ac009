import { sortVersions } from '../../protocol/version';
import { zhHash } from '../../protocol/hashes';
import { mirrorIndexBody, mirrorVersionBody } from '../../protocol/mirror';
import { providerPackageBody, providerVersionsBody } from '../../protocol/providers-v1';
import { platformName } from '../../protocol/platform';
import { releaseFilePath } from '../layout';
import type { PackageRecord, VersionRecord } from '../types';

/**
 * The response bodies stored in KV, from version records. Pure functions:
 * the publish step calls them, the Worker serves their output as is. The
 * shapes are src/protocol's; this file only maps records onto them.
 * Release-file URLs are path-absolute (see releaseFilePath).
 */

/** providers.v1 "list available versions": every version, ascending (one entry per version), and the lifecycle `warnings` if any. */
export function versionsDocument(records: readonly VersionRecord[], warnings: readonly string[] = []): string {
  const byVersion = new Map(records.map((record) => [record.version, record]));
  return providerVersionsBody(
    sortVersions([...byVersion.keys()]).map((version) => {
      const record = byVersion.get(version)!;
      return { version, protocols: record.protocols, platforms: record.packages };
    }),
    warnings,
  );
}

/** providers.v1 "find a provider package" for one platform, with OpenTofu's `packages` for every platform. */
export function downloadDocument(record: VersionRecord, pkg: PackageRecord): string {
  const file = (filename: string) => releaseFilePath(record.address, record.version, filename);
  return providerPackageBody({
    protocols: record.protocols,
    os: pkg.os,
    arch: pkg.arch,
    filename: pkg.filename,
    download_url: file(pkg.filename),
    shasums_url: file(record.shasumsFilename),
    shasums_signature_url: file(record.shasumsSignatureFilename),
    shasum: pkg.shasum,
    signing_keys: { gpg_public_keys: [record.signingKey] },
    packages: Object.fromEntries(record.packages.map((p) => [platformName(p), { hashes: packageHashes(p), package_size: p.size }])),
  });
}

/** Network mirror "list available versions". */
export function mirrorIndexDocument(records: readonly VersionRecord[]): string {
  return mirrorIndexBody(sortVersions(records.map((record) => record.version)));
}

/** Network mirror "list available installation packages" for one version: h1 first, then zh. */
export function mirrorVersionDocument(record: VersionRecord): string {
  return mirrorVersionBody(
    record.packages.map((p) => [platformName(p), { url: releaseFilePath(record.address, record.version, p.filename), hashes: [p.h1, zhHash(p.shasum)] }]),
  );
}

/** The lock-file hashes of one package: zh (the archive) then h1 (its contents). */
export function packageHashes(pkg: PackageRecord): string[] {
  return [zhHash(pkg.shasum), pkg.h1];
}
