import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import {
  InputError, parsePlatformName, parseProviderName, parseVersion, platformName, type Platform,
} from '../../../src/protocol/index';
import {
  ANY_EXECUTABLE_NAME, RELEASE_FILE_PATTERNS, archiveFilename, executableName, executableNamePattern, shasumsFilename,
} from '../../../src/protocol/release-files';
import { mapLimit } from '../../../src/concurrency';
import { checkReleaseShasums } from '../../../src/protocol/release-shasums';
import { inspectArchive, sha256File, type ArchiveDigest, type ProgressSink } from './archive';
import { assertReadableBinary, zipBinary } from './zip-binary';

/**
 * Reading a release from disk into a validated plan, before anything is
 * written anywhere: a goreleaser dist/ directory or individual files
 * (`terraform-provider-TYPE_VERSION_OS_ARCH.zip`, `…_manifest.json`,
 * `…_SHA256SUMS`, `…_SHA256SUMS.sig`), plus raw executables given as
 * `--binary OS_ARCH=PATH` (zipped the way goreleaser does).
 */

export interface ReleaseInput {
  /** Directories (scanned, not recursively) and files. */
  paths: string[];
  /** "OS_ARCH=PATH" strings. */
  binaries?: string[];
  /** Overrides the type read from file names (required when nothing names it). */
  type?: string;
  /** Overrides the version read from file names. */
  version?: string;
  /** Human progress lines (stderr in the CLI). */
  log?: (line: string) => void;
  /** Archives hashed at the same time (default: 2). */
  concurrency?: number;
}

export interface PlannedArchive {
  platform: Platform;
  /** Name it is published under: terraform-provider-TYPE_VERSION_OS_ARCH.zip. */
  filename: string;
  /** The file on disk (a temporary zip for --binary). */
  path: string;
  digest: ArchiveDigest;
  /** The executable found inside. */
  executable: string;
}

export interface ReleasePlan {
  type: string;
  version: string;
  protocols: string[];
  /** True when protocols came from the manifest, false when defaulted to 5.0. */
  protocolsFromManifest: boolean;
  archives: PlannedArchive[];
  /** A supplied SHA256SUMS (validated against the archives), to be published as is. */
  shasums: { path: string; bytes: Uint8Array } | null;
  /** A supplied detached signature over that SHA256SUMS (verified later against the namespace's keys). */
  signature: { path: string; bytes: Uint8Array } | null;
  /** Notes and warnings for the user. */
  notes: string[];
  /** Removes temporary files (zips made from --binary). */
  cleanup(): void;
}

const { archive: ARCHIVE, manifest: MANIFEST, shasums: SUMS, signature: SIG } = RELEASE_FILE_PATTERNS;
const EXECUTABLE = ANY_EXECUTABLE_NAME;
const PROTOCOL = /^[0-9]+\.[0-9]+$/;

interface Named { path: string; type: string; version: string }

/**
 * Validates the input and returns the plan. Throws InputError for the first
 * problem, naming the file and the fix: names, strict semver, platforms,
 * unreadable zips or a zip without the provider executable, a platform given
 * twice, SHA256SUMS lines not matching the zips, a signature without
 * SHA256SUMS, a malformed manifest. Writes nothing but temporary zips for
 * --binary (removed by cleanup(), also on error).
 */
export async function readRelease(input: ReleaseInput): Promise<ReleasePlan> {
  const log = input.log ?? (() => {});
  const notes: string[] = [];
  const archives: Named[] = [];
  const manifests: Named[] = [];
  const sums: Named[] = [];
  const sigs: Named[] = [];

  const consider = (path: string, fromDirectory: boolean) => {
    const name = basename(path);
    let match: RegExpExecArray | null;
    if ((match = ARCHIVE.exec(name))) archives.push({ path, type: match[1]!, version: match[2]! });
    else if ((match = MANIFEST.exec(name))) manifests.push({ path, type: match[1]!, version: match[2]! });
    else if ((match = SUMS.exec(name))) sums.push({ path, type: match[1]!, version: match[2]! });
    else if ((match = SIG.exec(name))) sigs.push({ path, type: match[1]!, version: match[2]! });
    else if (name.endsWith('.zip') && name.startsWith('terraform-provider-')) {
      throw new InputError(`${path}: archive names must be terraform-provider-TYPE_VERSION_OS_ARCH.zip (as goreleaser names them); rename it`);
    } else if (!fromDirectory) {
      throw new InputError(`${path}: not a provider release file (terraform-provider-TYPE_VERSION_OS_ARCH.zip, …_manifest.json, …_SHA256SUMS or …_SHA256SUMS.sig)`);
    }
  };

  for (const raw of input.paths) {
    const path = resolve(raw);
    let stat;
    try {
      stat = statSync(path);
    } catch {
      throw new InputError(`${raw}: no such file or directory; pass a goreleaser dist/ directory or release files`);
    }
    if (stat.isDirectory()) {
      readDirectory(raw, path, consider, notes);
    } else {
      consider(path, false);
    }
  }

  // What is missing, in the order a user can fix it: the files themselves (paths above, archives or
  // executables here) before the names read from them, so an empty or wrong folder is named as such
  // rather than as "pass --type".
  const binaries = (input.binaries ?? []).map(parseBinaryOption);
  if (archives.length === 0 && binaries.length === 0) {
    throw new InputError(`no provider archives found in ${input.paths.join(', ') || '(no paths)'}: expected terraform-provider-TYPE_VERSION_OS_ARCH.zip files (goreleaser dist/) or --binary OS_ARCH=PATH`);
  }
  const type = pickName('type', input.type, [...archives, ...manifests, ...sums, ...sigs], binaries);
  const version = pickName('version', input.version, [...archives, ...manifests, ...sums, ...sigs], binaries);
  for (const [list, what] of [[manifests, 'manifest'], [sums, 'SHA256SUMS'], [sigs, 'SHA256SUMS.sig']] as const) {
    if (list.length > 1) throw new InputError(`found ${list.length} ${what} files (${list.map((f) => f.path).join(', ')}); keep one`);
  }

  // Platforms: each once, known GOOS/GOARCH.
  const sources: { platform: Platform; path: string; fromBinary: boolean }[] = [];
  const seen = new Map<string, string>();
  const claim = (platform: Platform, path: string) => {
    const key = platformName(platform);
    const previous = seen.get(key);
    if (previous) throw new InputError(`platform ${key} is given twice: ${previous} and ${path}; keep one`);
    seen.set(key, path);
  };
  for (const archive of archives) {
    const platform = platformFrom(archive.path, ARCHIVE.exec(basename(archive.path))![3]!);
    claim(platform, archive.path);
    sources.push({ platform, path: archive.path, fromBinary: false });
  }
  for (const binary of binaries) {
    claim(binary.platform, `--binary ${binary.raw}`);
    sources.push({ platform: binary.platform, path: binary.path, fromBinary: true });
  }

  // Manifest → protocols.
  let protocols = ['5.0'];
  let protocolsFromManifest = false;
  if (manifests[0]) {
    protocols = readManifestProtocols(manifests[0].path);
    protocolsFromManifest = true;
  } else {
    notes.push('no terraform-provider-TYPE_VERSION_manifest.json: serving protocols ["5.0"] (add the manifest with metadata.protocol_versions for plugin protocol 6)');
  }

  const signature = sigs[0] ? { path: sigs[0].path, bytes: readBytes(sigs[0].path) } : null;
  const shasums = sums[0] ? { path: sums[0].path, bytes: readBytes(sums[0].path) } : null;
  if (signature && !shasums) {
    throw new InputError(`${signature.path}: a signature without its ${shasumsFilename(type, version)}; add the SHA256SUMS file it signs, or remove the .sig`);
  }

  const tempDir = binaries.length > 0 ? mkdtempSync(join(tmpdir(), 'edge-registry-zip-')) : null;
  const cleanup = () => {
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  };
  try {
    const planned = await mapLimit(sources, input.concurrency ?? 2, async (source) => {
      const filename = archiveFilename(type, version, source.platform);
      let path = source.path;
      if (source.fromBinary) {
        path = await zipBinary(source.path, tempDir!, { type, version, platform: source.platform });
        log(`zipped ${source.path} → ${filename}`);
      }
      const digest = await inspectArchive(path, progressLogger(log, basename(path)));
      const executable = findExecutable(path, digest, type, version, source.platform);
      const unixMode = digest.entries.find((e) => e.name === executable)?.unixMode;
      if (source.platform.os !== 'windows' && unixMode != null && (unixMode & 0o111) === 0) {
        notes.push(`${basename(path)}: ${executable} is not marked executable in the zip (mode ${unixMode.toString(8)}); Terraform may fail to start it`);
      }
      return { platform: source.platform, filename, path, digest, executable } satisfies PlannedArchive;
    });
    planned.sort((a, b) => (a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0));
    if (shasums) await checkShasums(shasums, planned, manifests[0]?.path);
    return { type, version, protocols, protocolsFromManifest, archives: planned, shasums, signature, notes, cleanup };
  } catch (error) {
    cleanup();
    throw error;
  }
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
function readDirectory(raw: string, path: string, consider: (path: string, fromDirectory: boolean) => void, notes: string[]): void {
  const entries = readdirSync(path, { withFileTypes: true });
  if (entries.length === 0) {
    throw new InputError(`${raw} is empty: expected a goreleaser dist/ with terraform-provider-TYPE_VERSION_OS_ARCH.zip files (run goreleaser first), or pass --binary OS_ARCH=PATH`);
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
      const inside = target !== null && target.startsWith(`${root}/`) && statSync(target).isFile();
      if (inside) {
        if (isReleaseFileName(entry.name)) {
          consider(full, true);
          notes.push(`${entry.name} is a symlink to ${target!.slice(root.length + 1)} in the same directory; published its contents`);
        } else {
          ignored.push(`${entry.name} (symlink)`);
        }
        continue;
      }
      const why = target === null ? 'a dangling symlink' : `a symlink to ${target}, ${statSync(target).isFile() ? 'outside the directory' : 'not a regular file'}`;
      if (isReleaseFileName(entry.name)) {
        throw new InputError(`${full} is ${why}; only symlinks to files inside ${raw} are followed — copy the file into the directory, or pass it as an argument`);
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

interface BinaryOption { raw: string; platform: Platform; path: string; type?: string; version?: string }

function parseBinaryOption(raw: string): BinaryOption {
  const index = raw.indexOf('=');
  if (index <= 0 || index === raw.length - 1) throw new InputError(`--binary ${raw}: expected OS_ARCH=PATH, e.g. --binary linux_amd64=./terraform-provider-acme`);
  const platform = parsePlatformName(raw.slice(0, index));
  const path = resolve(raw.slice(index + 1));
  // Checked here, before the type and version are read from its name: a wrong path is the real problem.
  assertReadableBinary(path);
  const match = EXECUTABLE.exec(basename(path));
  return { raw, platform, path, ...(match ? { type: match[1]!, version: match[2]! } : {}) };
}

function platformFrom(path: string, name: string): Platform {
  try {
    return parsePlatformName(name);
  } catch (error) {
    throw new InputError(`${path}: ${(error as Error).message}; rename the archive`);
  }
}

/** The type or version: the override, else the one every file name agrees on. */
function pickName(what: 'type' | 'version', override: string | undefined, files: Named[], binaries: BinaryOption[]): string {
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
    throw new InputError(`the files name different ${what}s (${[...found].map(([v, p]) => `${v} in ${basename(p)}`).join(', ')}); publish one provider version at a time, or pass --${what}`);
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

/** Requires the provider executable at the zip's top level; returns its name. */
function findExecutable(path: string, digest: ArchiveDigest, type: string, version: string, platform: Platform): string {
  const exact = executableName(type, version, platform);
  const accepted = executableNamePattern(type, version, platform);
  const found = digest.entries.find((entry) => !entry.isDirectory && accepted.test(entry.name));
  if (!found) {
    const names = digest.entries.map((e) => e.name);
    const shown = names.slice(0, 8).join(', ') + (names.length > 8 ? `, … (${names.length} entries)` : '');
    throw new InputError(`archive ${path}: expected executable ${exact} at the top level, found ${shown || 'no files'}; build with goreleaser's binary name "{{ .ProjectName }}_v{{ .Version }}" or use --binary`);
  }
  if (found.size === 0) throw new InputError(`archive ${path}: executable ${found.name} is empty; rebuild the provider`);
  return found.name;
}

function readManifestProtocols(path: string): string[] {
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

/** checkReleaseShasums, plus the manifest's line when the release has one. */
async function checkShasums(
  shasums: { path: string; bytes: Uint8Array },
  archives: PlannedArchive[],
  manifestPath: string | undefined,
): Promise<void> {
  const where = shasums.path;
  const listed = archives.map((a) => ({ filename: a.filename, sha256Hex: a.digest.sha256Hex, shown: a.path }));
  const entries = checkReleaseShasums(shasums.bytes, listed, where, (filename) => ARCHIVE.test(filename));
  const manifest = manifestPath === undefined ? undefined : entries.find((e) => e.filename === basename(manifestPath));
  if (manifest) {
    const { sha256Hex } = await sha256File(manifestPath!);
    if (sha256Hex !== manifest.sha256Hex) {
      throw new InputError(`${where}: ${manifest.filename} is listed with SHA-256 ${manifest.sha256Hex} but ${manifestPath} has ${sha256Hex}; rebuild the release`);
    }
  }
}

function readBytes(path: string): Uint8Array {
  return new Uint8Array(readFileSync(path));
}

/** A ProgressSink printing at most every 10% (files over 64 MB only). */
export function progressLogger(log: (line: string) => void, label: string): ProgressSink {
  let nextPercent = 10;
  return (done, total) => {
    if (total < 64 * 1024 * 1024) return;
    const percent = Math.floor((done / total) * 100);
    if (percent < nextPercent && done !== total) return;
    nextPercent = Math.floor(percent / 10) * 10 + 10;
    log(`  hashing ${label}: ${percent}% of ${(total / 1e6).toFixed(0)} MB`);
  };
}


