import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { InputError, type Platform } from '../../../src/protocol/index';
import { checkProviderExecutable, executableProblem } from '../../../src/protocol/provider-executable';
import { RELEASE_FILE_PATTERNS } from '../../../src/protocol/release-files';
import { checkReleaseShasums } from '../../../src/protocol/release-shasums';
import { sha256File, type ArchiveDigest } from './archive';
import type { PlannedArchive } from './planned-archive';

/**
 * The checks readRelease (./release.ts) makes on what it read: the provider
 * executable inside each zip, the manifest's protocols, and a supplied
 * SHA256SUMS against the archives.
 */

const PROTOCOL = /^[0-9]+\.[0-9]+$/;
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

/** The plugin protocols of a goreleaser manifest. Throws InputError naming `path` for a malformed one. */
export function readManifestProtocols(path: string): string[] {
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new InputError(`${path}: not valid JSON (${(error as Error).message}); expected {"version": 1, "metadata": {"protocol_versions": ["6.0"]}}`);
  }
  const metadata = (manifest as { metadata?: { protocol_versions?: unknown } } | null)?.metadata;
  const versions = metadata?.protocol_versions;
  if (versions === undefined) {
    throw new InputError(`${path}: metadata.protocol_versions is missing; expected {"version": 1, "metadata": {"protocol_versions": ["6.0"]}}`);
  }
  if (!Array.isArray(versions) || versions.length === 0 || !versions.every((v) => typeof v === 'string' && PROTOCOL.test(v))) {
    throw new InputError(`${path}: metadata.protocol_versions must be a non-empty list like ["5.0"] or ["6.0"]`);
  }
  return [...new Set(versions as string[])];
}

/**
 * A supplied SHA256SUMS checked against the planned archives
 * (src/protocol/release-shasums.ts), plus the manifest's line when the
 * release has one. Throws InputError naming the file and the fix.
 */
export async function checkShasums(shasums: { path: string; bytes: Uint8Array }, archives: PlannedArchive[], manifestPath: string | undefined): Promise<void> {
  const where = shasums.path;
  const listed = archives.map((a) => ({ filename: a.filename, sha256Hex: a.digest.sha256Hex, shown: a.path }));
  const entries = checkReleaseShasums(shasums.bytes, listed, where, (filename) => ARCHIVE.test(filename));
  const manifest = manifestPath === undefined ? undefined : entries.find((e) => e.filename === basename(manifestPath));
  if (manifest) {
    const { sha256Hex } = await sha256File(manifestPath!);
    if (sha256Hex !== manifest.sha256Hex) {
      throw new InputError(
        `${where}: ${manifest.filename} is listed with SHA-256 ${manifest.sha256Hex} but ${manifestPath} has ${sha256Hex}; rebuild the release`,
      );
    }
  }
}
