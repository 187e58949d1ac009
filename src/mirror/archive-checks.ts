import { zhHash, type ShasumEntry } from '../protocol/hashes';
import type { Platform } from '../protocol/platform';
import { checkProviderExecutable, executableProblem, type ListedEntry } from '../protocol/provider-executable';

/**
 * The checks a mirrored provider archive passes, one a function, as
 * Terraform's installer makes them (OpenTofu's
 * internal/getproviders/package_authentication.go is the model: one check a
 * type, combined by one function, here verifyMirroredArchive in
 * ./verify-archive.ts). Each way in picks the checks that fit what it was
 * given: `mirror sync` (scripts/lib/mirror/verify.ts: the download document
 * and the SHA256SUMS), pull-through (src/routes/mirror-pull/commit.ts: the
 * signed SHA256SUMS line of its manifest) and `mirror import` (the h1/zh
 * hashes of a `terraform providers mirror` directory).
 *
 * A check returns the sentence of its failure (or null) rather than throwing:
 * the way in chooses the error type (InputError for the CLI, UpstreamError
 * for pull-through), so the wording is the same everywhere.
 */

/** What reading an archive's bytes once gave. */
export interface ReadDigest {
  sha256Hex: string;
  size: number;
}

/** What opening the read archive as a zip gave. */
export interface OpenedZip {
  entries: readonly ListedEntry[];
  /** Go dirhash Hash1 of the entries, "h1:…". */
  h1: string;
  /** The SHA-256 of the bytes the zip reader saw, when it read them all (a local file); null when it read by range (R2). */
  sha256Hex: string | null;
}

/**
 * One check: on the bytes (run before they count as complete anywhere: a
 * stream holds its last block back until these pass) or on the zip (run
 * once it is stored or written, before anything is committed).
 */
export type ArchiveCheck = { on: 'bytes'; problem(read: ReadDigest): string | null } | { on: 'zip'; problem(zip: OpenedZip, read: ReadDigest): string | null };

/** The bytes' SHA-256 equals the download document's `shasum`. */
export function matchesDocumentShasum(doc: { shasum: string; downloadUrl: string; documentUrl: string }): ArchiveCheck {
  return {
    on: 'bytes',
    problem: (read) =>
      read.sha256Hex === doc.shasum
        ? null
        : `checksum check failed: ${doc.downloadUrl} has SHA-256 ${read.sha256Hex}, ${doc.documentUrl} says shasum ${doc.shasum}`,
  };
}

/** The SHA256SUMS (`sums`, read from `url`) has a line for `filename`, and it equals the bytes' SHA-256. */
export function matchesSumsLine(sums: readonly ShasumEntry[], filename: string, url: string): ArchiveCheck {
  return {
    on: 'bytes',
    problem: (read) => {
      const line = sums.find((entry) => entry.filename === filename);
      if (!line) return `SHA256SUMS check failed: ${url} has no line for ${filename}`;
      if (line.sha256Hex !== read.sha256Hex) return `SHA256SUMS check failed: ${url} says ${line.sha256Hex} for ${filename}, the archive is ${read.sha256Hex}`;
      return null;
    },
  };
}

/** The bytes are exactly the announced `size` (Content-Length; none announced: no check). `what` names the archive. */
export function hasAnnouncedSize(size: number | null, what: string): ArchiveCheck {
  return {
    on: 'bytes',
    problem: (read) => (size === null || read.size === size ? null : `checksum check failed: ${what} ended after ${read.size} of ${size} bytes`),
  };
}

/**
 * The bytes' SHA-256 equals `sha256Hex`, the archive's line in a SHA256SUMS
 * whose signature already verified (pull-through's manifest); a stream that
 * fails it stored nothing.
 */
export function matchesSignedSums(sha256Hex: string, what: string): ArchiveCheck {
  return {
    on: 'bytes',
    problem: (read) =>
      read.sha256Hex === sha256Hex
        ? null
        : `checksum check failed: ${what} has SHA-256 ${read.sha256Hex}, the signed SHA256SUMS says ${sha256Hex}; nothing was stored`,
  };
}

/** The zip reader saw the bytes that were verified (a file changed after its download is refused). `source` names it. */
export function unchangedWhileRead(source: string): ArchiveCheck {
  return {
    on: 'zip',
    problem: (zip, read) =>
      zip.sha256Hex === null || zip.sha256Hex === read.sha256Hex
        ? null
        : `archive check failed: ${source} changed while being read (SHA-256 ${zip.sha256Hex}, expected ${read.sha256Hex})`,
  };
}

/**
 * The zip holds the provider executable (src/protocol/provider-executable.ts,
 * the check of every way in); `label` starts the sentence.
 */
export function holdsProviderExecutable(release: { type: string; version: string; platform: Pick<Platform, 'os'> }, label: string): ArchiveCheck {
  return {
    on: 'zip',
    problem: (zip) => {
      const check = checkProviderExecutable(zip.entries, release);
      return check.ok ? null : executableProblem(check, label, 'mirror');
    },
  };
}

/** The zip's h1 is one of `h1s` (from `documentPath`); `path` names the archive. */
export function matchesH1(h1s: readonly string[], path: string, documentPath: string): ArchiveCheck {
  return {
    on: 'zip',
    problem: (zip) => (h1s.includes(zip.h1) ? null : `hash check failed: ${path} has ${zip.h1}, ${documentPath} says ${h1s.join(', ')}`),
  };
}

/** The bytes' zh (SHA-256) is one of `zhs` (from `documentPath`), when it gives any; `path` names the archive. */
export function matchesZh(zhs: readonly string[], path: string, documentPath: string): ArchiveCheck {
  return {
    on: 'zip',
    problem: (_zip, read) =>
      zhs.length === 0 || zhs.includes(zhHash(read.sha256Hex))
        ? null
        : `hash check failed: ${path} has ${zhHash(read.sha256Hex)}, ${documentPath} says ${zhs.join(', ')}`,
  };
}
