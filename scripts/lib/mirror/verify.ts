import { InputError, parseShasums, platformName, type Platform, type ShasumEntry } from '../../../src/protocol/index';
import { archiveFilename } from '../../../src/protocol/release-files';
import type { PackageRecord } from '../../../src/store/types';
import { inspectArchive, type ArchiveDigest } from '../provider/archive';
import type { UpstreamPackage } from '../../../src/mirror/upstream';
import {
  holdsProviderExecutable,
  matchesDocumentShasum,
  matchesH1,
  matchesSumsLine,
  matchesZh,
  unchangedWhileRead,
  type OpenedZip,
} from '../../../src/mirror/archive-checks';
import { verifyMirroredArchive, type ArchiveSource, type VerifiedArchive } from '../../../src/mirror/verify-archive';
import type { UpstreamHttp } from './upstream-http';

/**
 * The CLI's ways into the one archive verification
 * (src/mirror/verify-archive.ts, the checks of src/mirror/archive-checks.ts):
 * `mirror sync` downloads to a file, `mirror import` reads a file on disk.
 * Every failure is an InputError naming the file or URL and the check. (The
 * SHA256SUMS signature check is the Worker's, src/mirror/signature.ts: one
 * for `mirror sync` and pull-through.)
 */

/** Parses SHA256SUMS; an unreadable document fails with its URL. */
export function readSums(bytes: Uint8Array, url: string): ShasumEntry[] {
  try {
    return parseShasums(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new InputError(`SHA256SUMS check failed: ${url}: ${(error as Error).message}`);
  }
}

/**
 * Downloads one upstream package to `path` (streamed, progress logged every
 * 32 MB) and verifies it: its SHA-256 equals the document's `shasum` and the
 * verified SHA256SUMS line (`sums`), and the zip holds the provider
 * executable. Returns the package record to store. Throws (UpstreamError for
 * the download, InputError naming the URL and the failed check) otherwise.
 */
export async function downloadVerified(
  http: Pick<UpstreamHttp, 'download'>,
  doc: UpstreamPackage,
  path: string,
  sums: readonly ShasumEntry[],
  of: { address: { type: string }; version: string; label: string },
  log: (line: string) => void,
): Promise<PackageRecord> {
  const verified = await verifyMirroredArchive(
    downloadedArchive(http, doc, path, of.label, log),
    [
      matchesDocumentShasum(doc),
      matchesSumsLine(sums, doc.filename, doc.shasumsUrl),
      unchangedWhileRead(doc.downloadUrl),
      holdsProviderExecutable(
        { type: of.address.type, version: of.version, platform: doc.platform },
        `archive check failed: ${doc.downloadUrl} (${platformName(doc.platform)})`,
      ),
    ],
    refused,
  );
  return packageRecord(of.address.type, of.version, doc.platform, verified);
}

/**
 * Verifies an archive of a `terraform providers mirror` directory: a zip
 * holding the provider executable whose h1 is one of `hashes.h1` and, when
 * the document gives any, whose zh is one of `hashes.zh` (both from
 * `documentPath`). Returns the package record to store; throws InputError
 * naming the file and the failed check.
 */
export async function verifyImported(
  path: string,
  release: { type: string; version: string; platform: Platform },
  hashes: { h1: readonly string[]; zh: readonly string[] },
  documentPath: string,
): Promise<PackageRecord> {
  const verified = await verifyMirroredArchive(
    fileOnDisk(path),
    [
      holdsProviderExecutable(release, `archive check failed: ${path} (${platformName(release.platform)})`),
      matchesH1(hashes.h1, path, documentPath),
      matchesZh(hashes.zh, path, documentPath),
    ],
    refused,
  );
  return packageRecord(release.type, release.version, release.platform, verified);
}

const refused = (message: string) => new InputError(message);

function packageRecord(type: string, version: string, platform: Platform, verified: VerifiedArchive): PackageRecord {
  return {
    os: platform.os,
    arch: platform.arch,
    filename: archiveFilename(type, version, platform),
    shasum: verified.sha256Hex,
    h1: verified.h1,
    size: verified.size,
  };
}

/** The upstream archive of `doc`, downloaded to `path` (the temp file is the caller's to remove). */
function downloadedArchive(
  http: Pick<UpstreamHttp, 'download'>,
  doc: UpstreamPackage,
  path: string,
  label: string,
  log: (line: string) => void,
): ArchiveSource {
  return {
    async read(settle) {
      const platform = platformName(doc.platform);
      const started = Date.now();
      let lastLogged = 0;
      const downloaded = await http.download(doc.downloadUrl, path, 'archive', (bytes, total) => {
        if (bytes - lastLogged >= 32 * 1024 * 1024) {
          lastLogged = bytes;
          const rate = bytes / 1e6 / Math.max(0.001, (Date.now() - started) / 1000);
          log(`  ${label} ${platform}: ${(bytes / 1e6).toFixed(0)}${total ? ` of ${(total / 1e6).toFixed(0)}` : ''} MB (${rate.toFixed(0)} MB/s)`);
        }
      });
      settle(downloaded);
      return downloaded;
    },
    open: async () => openedZip(await inspect(path, doc.downloadUrl)),
    discard: async () => null,
  };
}

/** An archive already on disk: read once by the zip reader, which hashes it too. */
function fileOnDisk(path: string): ArchiveSource {
  let digest: ArchiveDigest | undefined;
  return {
    async read(settle) {
      digest = await inspect(path, path);
      const read = { sha256Hex: digest.sha256Hex, size: digest.size };
      settle(read);
      return read;
    },
    open: async () => openedZip(digest ?? (await inspect(path, path))),
    discard: async () => null,
  };
}

/** Reads the zip at `path`; one that is not a readable zip fails naming `source`. */
async function inspect(path: string, source: string): Promise<ArchiveDigest> {
  try {
    return await inspectArchive(path);
  } catch (error) {
    throw new InputError(`archive check failed: ${source}: ${(error as Error).message.replace(`archive ${path}: `, '')}`);
  }
}

function openedZip(digest: ArchiveDigest): OpenedZip {
  return { entries: digest.entries, h1: digest.h1, sha256Hex: digest.sha256Hex };
}
