import type { Platform } from './platform';
import { executableName, executableNamePattern } from './release-files';

/**
 * "The zip holds the provider executable": the one check every way in makes on
 * a provider archive (CLI publish local and --remote, the publish API,
 * `mirror sync`/`import`, pull-through). Terraform's installer runs
 * terraform-provider-TYPE_vVERSION[_xN][.exe] from the top of the unpacked
 * zip and refuses a package without it, so a registry must never serve one.
 *
 * The check reads only the entry list, so it works on any zip reader's output
 * (a local file, an R2 object read by range). It returns a result rather than
 * throwing: the caller chooses the error type (InputError for a publisher,
 * UpstreamError for a mirrored upstream) and the message comes from
 * executableProblem, so the wording is the same everywhere.
 */

/** What the check needs of a zip entry; `size` (uncompressed) when the reader knows it. */
export interface ListedEntry {
  name: string;
  isDirectory?: boolean;
  size?: number;
}

export type ExecutableCheck =
  | { ok: true; name: string }
  | { ok: false; problem: 'missing'; expected: string; found: readonly string[] }
  | { ok: false; problem: 'empty'; name: string };

/**
 * Finds the provider executable among `entries`: a file (not a directory) at
 * the top level named executableNamePattern(type, version, os), not empty
 * when the entry's size is known. Never throws.
 */
export function checkProviderExecutable(
  entries: readonly ListedEntry[],
  release: { type: string; version: string; platform: Pick<Platform, 'os'> },
): ExecutableCheck {
  const accepted = executableNamePattern(release.type, release.version, release.platform);
  const isDirectory = (entry: ListedEntry) => entry.isDirectory ?? entry.name.endsWith('/');
  const found = entries.find((entry) => !isDirectory(entry) && accepted.test(entry.name));
  if (!found) {
    return { ok: false, problem: 'missing', expected: executableName(release.type, release.version, release.platform), found: entries.map((e) => e.name) };
  }
  if (found.size === 0) return { ok: false, problem: 'empty', name: found.name };
  return { ok: true, name: found.name };
}

/**
 * The sentence for a failed check, after `label` (what the archive is called
 * to this reader). A publisher is told how to rebuild; a mirror reader is told
 * what the upstream archive holds.
 */
export function executableProblem(check: Exclude<ExecutableCheck, { ok: true }>, label: string, reader: 'publisher' | 'mirror'): string {
  if (check.problem === 'empty') {
    return reader === 'publisher'
      ? `${label}: executable ${check.name} is empty; rebuild the provider`
      : `${label} holds an empty provider executable ${check.name}`;
  }
  if (reader === 'mirror') return `${label} holds no provider executable ${check.expected} (found ${check.found.slice(0, 5).join(', ') || 'no entries'})`;
  const shown = check.found.slice(0, 8).join(', ') + (check.found.length > 8 ? `, … (${check.found.length} entries)` : '');
  return `${label}: expected executable ${check.expected} at the top level, found ${shown || 'no files'}; build with goreleaser's binary name "{{ .ProjectName }}_v{{ .Version }}" or use --binary`;
}
