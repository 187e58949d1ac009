import { InputError } from './errors';
import { parseShasums, type ShasumEntry } from './hashes';

/**
 * The checks a release's SHA256SUMS passes before it is published, step 4 of
 * the one release pipeline (src/protocol/provider-release.ts) that the publish
 * CLI and the Worker's publish API both run:
 * sha256sum text in UTF-8, a line for every archive with the archive's
 * SHA-256, and no line for an archive that is not being published.
 */

export interface ListedArchive {
  filename: string;
  sha256Hex: string;
  /** How the archive is named in the refusal (its path for the CLI). */
  shown: string;
}

/**
 * Checks `bytes` (named `where`) against `archives` and returns its lines.
 * `isArchiveLine` says which other lines name an archive (and so must be
 * among `archives`); the caller checks any other line it knows. Throws
 * InputError naming `where` and the fix for text that is not UTF-8 or not
 * sha256sum output, an archive without a line or with another SHA-256, and
 * a line for an archive not given.
 */
export function checkReleaseShasums(
  bytes: Uint8Array,
  archives: readonly ListedArchive[],
  where: string,
  isArchiveLine: (filename: string) => boolean,
): ShasumEntry[] {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new InputError(`${where}: not UTF-8 text; expected sha256sum output`);
  }
  let entries: ShasumEntry[];
  try {
    entries = parseShasums(text);
  } catch (error) {
    throw new InputError(`${where}: ${(error as Error).message}; regenerate it with sha256sum, or remove it (and its .sig) so it is generated`);
  }
  const listed = new Map(entries.map((e) => [e.filename, e.sha256Hex]));
  for (const archive of archives) {
    const hash = listed.get(archive.filename);
    if (hash === undefined) {
      throw new InputError(`${where}: has no line for ${archive.filename}; the SHA256SUMS must list every archive (regenerate it, or remove it and its .sig)`);
    }
    if (hash !== archive.sha256Hex) {
      throw new InputError(
        `${where}: ${archive.filename} is listed with SHA-256 ${hash} but the archive ${archive.shown} has ${archive.sha256Hex}; the archive changed after SHA256SUMS was made — rebuild the release`,
      );
    }
  }
  const given = new Set(archives.map((a) => a.filename));
  for (const entry of entries) {
    if (isArchiveLine(entry.filename) && !given.has(entry.filename)) {
      throw new InputError(`${where}: lists ${entry.filename}, which is not among the archives given; add that archive, or regenerate SHA256SUMS without it`);
    }
  }
  return entries;
}
