import { InputError, parseShasums, platformName, type Platform, type ShasumEntry } from '../../../src/protocol/index';
import { archiveFilename } from '../../../src/protocol/release-files';
import { checkProviderExecutable, executableProblem } from '../../../src/protocol/provider-executable';
import type { PackageRecord } from '../../../src/store/types';
import { inspectArchive, type ArchiveDigest } from '../provider/archive';
import type { UpstreamPackage } from '../../../src/mirror/upstream';
import type { UpstreamHttp } from './upstream-http';

/**
 * The checks Terraform's installer makes on a provider package, each failing
 * with a message that names the file or URL and the check. (The SHA256SUMS
 * signature check is the Worker's, src/mirror/signature.ts: one for
 * `mirror sync` and pull-through.)
 */

/** Parses SHA256SUMS; an unreadable document fails with its URL. */
export function readSums(bytes: Uint8Array, url: string): ShasumEntry[] {
  try {
    return parseShasums(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new InputError(`SHA256SUMS check failed: ${url}: ${(error as Error).message}`);
  }
}

/** The SUMS line for `filename` must exist and equal `sha256Hex`. */
export function checkSumsLine(sums: readonly ShasumEntry[], filename: string, sha256Hex: string, url: string): void {
  const line = sums.find((entry) => entry.filename === filename);
  if (!line) throw new InputError(`SHA256SUMS check failed: ${url} has no line for ${filename}`);
  if (line.sha256Hex !== sha256Hex) {
    throw new InputError(`SHA256SUMS check failed: ${url} says ${line.sha256Hex} for ${filename}, the archive is ${sha256Hex}`);
  }
}

/**
 * Opens the downloaded zip: it must be a readable zip holding the provider
 * executable at its top (terraform-provider-TYPE_vVERSION, optionally with
 * goreleaser's _xN suffix; .exe on windows), and its SHA-256 must still be
 * `sha256Hex` when given. Returns the digest (h1 included).
 */
export async function verifyArchive(
  path: string,
  expected: { type: string; version: string; platform: Platform; sha256Hex?: string; source: string },
): Promise<ArchiveDigest> {
  let digest: ArchiveDigest;
  try {
    digest = await inspectArchive(path);
  } catch (error) {
    throw new InputError(`archive check failed: ${expected.source}: ${(error as Error).message.replace(`archive ${path}: `, '')}`);
  }
  if (expected.sha256Hex !== undefined && digest.sha256Hex !== expected.sha256Hex) {
    throw new InputError(`archive check failed: ${expected.source} changed while being read (SHA-256 ${digest.sha256Hex}, expected ${expected.sha256Hex})`);
  }
  const check = checkProviderExecutable(digest.entries, expected);
  if (!check.ok) throw new InputError(executableProblem(check, `archive check failed: ${expected.source} (${platformName(expected.platform)})`, 'mirror'));
  return digest;
}

/**
 * Downloads one upstream package to `path` (streamed, progress logged every
 * 32 MB) and verifies it: its SHA-256 equals the document's `shasum` and the
 * verified SHA256SUMS line (`sums`), and the zip holds the provider
 * executable. Returns the package record to store. Throws (UpstreamError or
 * InputError, naming the URL and the failed check) otherwise.
 */
export async function downloadVerified(
  http: Pick<UpstreamHttp, 'download'>,
  doc: UpstreamPackage,
  path: string,
  sums: readonly ShasumEntry[],
  of: { address: { type: string }; version: string; label: string },
  log: (line: string) => void,
): Promise<PackageRecord> {
  const platform = platformName(doc.platform);
  const started = Date.now();
  let lastLogged = 0;
  const downloaded = await http.download(doc.downloadUrl, path, 'archive', (bytes, total) => {
    if (bytes - lastLogged >= 32 * 1024 * 1024) {
      lastLogged = bytes;
      const rate = bytes / 1e6 / Math.max(0.001, (Date.now() - started) / 1000);
      log(`  ${of.label} ${platform}: ${(bytes / 1e6).toFixed(0)}${total ? ` of ${(total / 1e6).toFixed(0)}` : ''} MB (${rate.toFixed(0)} MB/s)`);
    }
  });
  if (downloaded.sha256Hex !== doc.shasum) {
    throw new Error(`checksum check failed: ${doc.downloadUrl} has SHA-256 ${downloaded.sha256Hex}, ${doc.documentUrl} says shasum ${doc.shasum}`);
  }
  checkSumsLine(sums, doc.filename, doc.shasum, doc.shasumsUrl);
  const digest = await verifyArchive(path, {
    type: of.address.type,
    version: of.version,
    platform: doc.platform,
    sha256Hex: doc.shasum,
    source: doc.downloadUrl,
  });
  return {
    os: doc.platform.os,
    arch: doc.platform.arch,
    filename: archiveFilename(of.address.type, of.version, doc.platform),
    shasum: digest.sha256Hex,
    h1: digest.h1,
    size: digest.size,
  };
}
