import { readFileSync } from 'node:fs';
import { InputError, type Platform } from '../../../src/protocol/index';
import { checkProviderExecutable, executableProblem } from '../../../src/protocol/provider-executable';
import { RELEASE_FILE_PATTERNS } from '../../../src/protocol/release-files';
import { checkReleaseShasums } from '../../../src/protocol/release-shasums';
import { checkManifestLine, parseManifestProtocols } from '../../../src/protocol/release-manifest';
import { sha256File, type ArchiveDigest } from './archive';
import type { PlannedArchive } from './planned-archive';

/**
 * The checks readRelease (./release.ts) makes on what it read: the provider
 * executable inside each zip, the manifest's protocols, and a supplied
 * SHA256SUMS against the archives.
 */

const ARCHIVE = RELEASE_FILE_PATTERNS.archive;

/**
 * Requires the provider executable at the zip's top level; returns its name.
 * Throws InputError naming the archive when it is missing or empty.
 */
export function findExecutable(path: string, digest: ArchiveDigest, type: string, version: string, platform: Platform): string {
  const check = checkProviderExecutable(digest.entries, { type, version, platform });
  if (!check.ok) throw new InputError(executableProblem(check, `archive ${path}`, 'publisher'));
  return check.name;
}

/** The plugin protocols of a goreleaser manifest file (src/protocol/release-manifest.ts). Throws InputError naming `path` for a malformed one. */
export function readManifestProtocols(path: string): string[] {
  return parseManifestProtocols(new Uint8Array(readFileSync(path)), path);
}

/**
 * A supplied SHA256SUMS checked against the planned archives
 * (src/protocol/release-shasums.ts), and its manifest line, when it lists
 * one, against the manifest found (`manifestPath`, in dist/ or the
 * repository root; none found: refused). Throws InputError naming the file and the fix.
 */
export async function checkShasums(
  shasums: { path: string; bytes: Uint8Array },
  archives: PlannedArchive[],
  manifest: { filename: string; path: string | undefined },
): Promise<void> {
  const listed = archives.map((a) => ({ filename: a.filename, sha256Hex: a.digest.sha256Hex, shown: a.path }));
  const entries = checkReleaseShasums(shasums.bytes, listed, shasums.path, (filename) => ARCHIVE.test(filename));
  const found = manifest.path === undefined ? null : { sha256Hex: (await sha256File(manifest.path)).sha256Hex, shown: manifest.path };
  checkManifestLine(entries, manifest.filename, found, shasums.path);
}
