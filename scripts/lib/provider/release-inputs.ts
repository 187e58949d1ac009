import { readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { InputError, parsePlatformName, parseProviderName, parseVersion, type Platform } from '../../../src/protocol/index';
import { ANY_EXECUTABLE_NAME, RELEASE_FILE_PATTERNS } from '../../../src/protocol/release-files';
import { assertReadableBinary } from './zip-binary';

/**
 * What a provider publish is given, told apart before anything is read
 * inside it: the files of a goreleaser dist/ directory, `--binary OS_ARCH=PATH`
 * options, and the provider type and version the file names agree on.
 * Used by readRelease (./release.ts).
 */

const { archive: ARCHIVE, manifest: MANIFEST, shasums: SUMS, signature: SIG } = RELEASE_FILE_PATTERNS;

/** A release file and the type and version its name says. */
export interface Named {
  path: string;
  type: string;
  version: string;
}

/** A release file's name (archive, manifest, SHA256SUMS, signature) — what a dist/ directory is read for. */
function isReleaseFileName(name: string): boolean {
  return ARCHIVE.test(name) || MANIFEST.test(name) || SUMS.test(name) || SIG.test(name) || (name.startsWith('terraform-provider-') && name.endsWith('.zip'));
}

/**
 * Reads a dist/ directory. Regular files are considered; a symlink is
 * followed only to a regular file inside the directory. A release file name
 * that is anything else (a symlink out of the directory, a dangling one, a
 * directory) is refused, so a publish never goes ahead with fewer files than
 * the directory holds; any other entry is listed in a note as ignored.
 * Throws InputError for an empty directory.
 */
export function readDirectory(raw: string, path: string, consider: (path: string, fromDirectory: boolean) => void, notes: string[]): void {
  const entries = readdirSync(path, { withFileTypes: true });
  if (entries.length === 0) {
    throw new InputError(
      `${raw} is empty: expected a goreleaser dist/ with terraform-provider-TYPE_VERSION_OS_ARCH.zip files (run goreleaser first), or pass --binary OS_ARCH=PATH`,
    );
  }
  const root = realpathSync(path);
  const ignored: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const full = join(path, entry.name);
    if (entry.isFile()) {
      if (isReleaseFileName(entry.name)) consider(full, true);
      else ignored.push(entry.name);
      continue;
    }
    if (entry.isSymbolicLink()) {
      let target: string | null = null;
      try {
        target = realpathSync(full);
      } catch {
        target = null;
      }
      const inside = target?.startsWith(`${root}/`) === true && statSync(target).isFile();
      if (inside) {
        if (isReleaseFileName(entry.name)) {
          consider(full, true);
          notes.push(`${entry.name} is a symlink to ${target!.slice(root.length + 1)} in the same directory; published its contents`);
        } else {
          ignored.push(`${entry.name} (symlink)`);
        }
        continue;
      }
      const why =
        target === null ? 'a dangling symlink' : `a symlink to ${target}, ${statSync(target).isFile() ? 'outside the directory' : 'not a regular file'}`;
      if (isReleaseFileName(entry.name)) {
        throw new InputError(
          `${full} is ${why}; only symlinks to files inside ${raw} are followed — copy the file into the directory, or pass it as an argument`,
        );
      }
      ignored.push(`${entry.name} (${why})`);
      continue;
    }
    if (isReleaseFileName(entry.name)) {
      throw new InputError(`${full} is not a regular file (${entry.isDirectory() ? 'a directory' : 'a special file'}); a release file must be a file`);
    }
    ignored.push(entry.isDirectory() ? `${entry.name}/` : entry.name);
  }
  if (ignored.length > 0) {
    notes.push(`ignored in ${raw} (not release files): ${ignored.slice(0, 12).join(', ')}${ignored.length > 12 ? `, … (${ignored.length} in all)` : ''}`);
  }
}

/** A parsed `--binary OS_ARCH=PATH` (the type and version when the executable's name says them). */
export interface BinaryOption {
  raw: string;
  platform: Platform;
  path: string;
  type?: string;
  version?: string;
}

/** Parses `--binary OS_ARCH=PATH`. Throws InputError for another form, an unknown platform or an unreadable file. */
export function parseBinaryOption(raw: string): BinaryOption {
  const index = raw.indexOf('=');
  if (index <= 0 || index === raw.length - 1)
    throw new InputError(`--binary ${raw}: expected OS_ARCH=PATH, e.g. --binary linux_amd64=./terraform-provider-acme`);
  const platform = parsePlatformName(raw.slice(0, index));
  const path = resolve(raw.slice(index + 1));
  // Checked here, before the type and version are read from its name: a wrong path is the real problem.
  assertReadableBinary(path);
  const match = ANY_EXECUTABLE_NAME.exec(basename(path));
  return { raw, platform, path, ...(match ? { type: match[1]!, version: match[2]! } : {}) };
}

/** The platform an archive's name says. Throws InputError naming `path` for an unknown one. */
export function platformFrom(path: string, name: string): Platform {
  try {
    return parsePlatformName(name);
  } catch (error) {
    throw new InputError(`${path}: ${(error as Error).message}; rename the archive`);
  }
}

/**
 * The type or version: the override, else the one every file name agrees on.
 * Throws InputError when it is malformed, not lower case, missing or not agreed on.
 */
export function pickName(what: 'type' | 'version', override: string | undefined, files: Named[], binaries: BinaryOption[]): string {
  const parse = (value: string) => (what === 'type' ? parseProviderName(value, 'type') : parseVersion(value));
  if (override !== undefined) {
    try {
      return parse(override);
    } catch (error) {
      throw new InputError(`--${what}: ${(error as Error).message}`);
    }
  }
  const found = new Map<string, string>();
  for (const file of files) found.set(file[what], file.path);
  if (files.length === 0) for (const binary of binaries) if (binary[what]) found.set(binary[what]!, binary.path);
  if (found.size === 0) throw new InputError(`cannot tell the provider ${what} from the file names; pass --${what}`);
  if (found.size > 1) {
    throw new InputError(
      `the files name different ${what}s (${[...found].map(([v, p]) => `${v} in ${basename(p)}`).join(', ')}); publish one provider version at a time, or pass --${what}`,
    );
  }
  const [value, path] = [...found][0]!;
  try {
    const parsed = parse(value);
    if (parsed !== value) throw new InputError(`${what} "${value}" must be lower case`);
    return parsed;
  } catch (error) {
    throw new InputError(`${path}: ${(error as Error).message}; rename the file or pass --${what}`);
  }
}
