import { InputError } from './errors';
import type { ShasumEntry } from './hashes';

/**
 * goreleaser's provider manifest, the one source of a release's plugin
 * protocols for every way in (the publish CLI and the Worker's publish API):
 * `terraform-registry-manifest.json` in the repository root, which goreleaser's
 * `checksum.extra_files` lists in SHA256SUMS as
 * `terraform-provider-TYPE_VERSION_manifest.json` (and `release.extra_files`
 * uploads under that name), without copying it into dist/.
 */

/** The manifest's name in a provider repository's root, where goreleaser leaves it. */
export const REPOSITORY_MANIFEST = 'terraform-registry-manifest.json';

const PROTOCOL = /^[0-9]{1,3}\.[0-9]{1,3}$/;
const EXPECTED = 'expected {"version": 1, "metadata": {"protocol_versions": ["6.0"]}}';

/**
 * The plugin protocols of a manifest's bytes (`where` names it in errors),
 * duplicates dropped. Throws InputError naming `where` for text that is not
 * JSON, a missing metadata.protocol_versions, or one that is not a non-empty
 * list of "N.N" strings (at most 8).
 */
export function parseManifestProtocols(bytes: Uint8Array, where: string): string[] {
  let manifest: unknown;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch (error) {
    throw new InputError(`${where}: not valid JSON (${(error as Error).message}); ${EXPECTED}`);
  }
  const versions = (manifest as { metadata?: { protocol_versions?: unknown } } | null)?.metadata?.protocol_versions;
  if (versions === undefined) throw new InputError(`${where}: metadata.protocol_versions is missing; ${EXPECTED}`);
  if (!Array.isArray(versions) || versions.length === 0 || versions.length > 8 || !versions.every((v) => typeof v === 'string' && PROTOCOL.test(v))) {
    throw new InputError(`${where}: metadata.protocol_versions must be a non-empty list like ["5.0"] or ["6.0"]`);
  }
  return [...new Set(versions as string[])];
}

/**
 * The manifest's line in SHA256SUMS (`entries`, from checkReleaseShasums),
 * when there is one, checked against the manifest's SHA-256. `manifest` null:
 * none was given, and a listed manifest is refused (its protocols would be
 * guessed). Throws InputError naming `where` and the fix.
 */
export function checkManifestLine(
  entries: readonly ShasumEntry[],
  filename: string,
  manifest: { sha256Hex: string; shown: string } | null,
  where: string,
): void {
  const line = entries.find((e) => e.filename === filename);
  if (!line) return;
  if (!manifest) {
    throw new InputError(
      `${where}: lists ${filename}, but no manifest was given; pass ${REPOSITORY_MANIFEST} from the repository root (goreleaser leaves it there), so the registry serves its protocols`,
    );
  }
  if (line.sha256Hex !== manifest.sha256Hex) {
    throw new InputError(
      `${where}: ${filename} is listed with SHA-256 ${line.sha256Hex} but ${manifest.shown} has ${manifest.sha256Hex}; the manifest changed after the release was built — rebuild the release`,
    );
  }
}
