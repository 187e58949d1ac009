import type { ArchiveCheck, OpenedZip, ReadDigest } from './archive-checks';

/**
 * Verifying a mirrored provider archive: the one function every way in calls
 * (`mirror sync` and `mirror import` in scripts/lib/mirror/verify.ts,
 * pull-through in src/routes/mirror-pull/commit.ts), combining the checks of
 * ./archive-checks.ts. What differs between the ways in is only where the
 * bytes are, behind ArchiveSource: a file downloaded or found on disk (Node),
 * or a stream copied to R2 and the client at once, or an object R2 already
 * holds (src/mirror/pulled-archive.ts).
 */

/** The runtime's side: reading the bytes once, opening them as a zip, removing them after a failed zip check. */
export interface ArchiveSource {
  /**
   * Reads every byte once, hashing them, and calls `settle` with the digest
   * before the bytes count as complete anywhere (a stream holds its last
   * block back until settle returns), then resolves with it once they are
   * kept (written to the file or stored). Rejects with what settle throws, or
   * with the runtime's error when reading fails.
   */
  read(settle: (digest: ReadDigest) => void): Promise<ReadDigest>;
  /** Opens the kept bytes as a zip. Throws the runtime's "archive check failed: …" error when they are not a zip the registry accepts. */
  open(): Promise<OpenedZip>;
  /** Removes the kept bytes after a zip check failed; returns what the error adds ("deleted it again"), or null when there is nothing to say. */
  discard(): Promise<string | null>;
}

/** A verified archive: what its package record needs. */
export interface VerifiedArchive {
  sha256Hex: string;
  size: number;
  h1: string;
}

/**
 * Reads `source`, running the `bytes` checks on its digest before the bytes
 * are complete, then opens it and runs the `zip` checks, in the order given.
 * The first failed check throws `refuse(sentence)` (a failed zip check after
 * the source discarded its bytes, the sentence ending with its note); errors
 * of the source itself pass through unchanged; a source whose read resolved
 * without calling settle fails with an Error (a bug: nothing it read is used).
 */
export async function verifyMirroredArchive(
  source: ArchiveSource,
  checks: readonly ArchiveCheck[],
  refuse: (message: string) => Error,
): Promise<VerifiedArchive> {
  let settled = false;
  const settle = checkBytes(checks, refuse);
  const read = await source.read((digest) => {
    settle(digest);
    settled = true;
  });
  // A source that kept its bytes without running the checks on them is a bug: nothing it read is used.
  if (!settled) throw new Error('archive verification: the source kept its bytes without running the bytes checks on them');
  const zip = await source.open();
  for (const check of checks) {
    const problem = check.on === 'zip' ? check.problem(zip, read) : null;
    if (problem !== null) {
      const note = await source.discard();
      throw refuse(note === null ? problem : `${problem}; ${note}`);
    }
  }
  return { sha256Hex: read.sha256Hex, size: read.size, h1: zip.h1 };
}

/**
 * The `bytes` checks of `checks` as one function of the digest, in order:
 * throws `refuse(sentence)` for the first that fails. What a source's read
 * gets as `settle` (and what a benchmark of the copy runs).
 */
export function checkBytes(checks: readonly ArchiveCheck[], refuse: (message: string) => Error): (digest: ReadDigest) => void {
  return (digest) => {
    for (const check of checks) {
      const problem = check.on === 'bytes' ? check.problem(digest) : null;
      if (problem !== null) throw refuse(problem);
    }
  };
}
