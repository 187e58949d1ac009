import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError, platformName, type Platform } from '../../../src/protocol/index';
import { RELEASE_FILE_PATTERNS, archiveFilename, manifestFilename, shasumsFilename } from '../../../src/protocol/release-files';
import { REPOSITORY_MANIFEST } from '../../../src/protocol/release-manifest';
import { mapLimit } from '../../../src/concurrency';
import { inspectArchive, type ProgressSink } from './archive';
import { checkShasums, findExecutable, readManifestProtocols } from './release-checks';
import type { PlannedArchive } from './planned-archive';
import { parseBinaryOption, pickName, platformFrom, readDirectory, type Named } from './release-inputs';
import { zipBinary } from './zip-binary';

export type { PlannedArchive };

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

export interface ReleasePlan {
  type: string;
  version: string;
  protocols: string[];
  /** True when protocols came from the manifest, false when defaulted to 5.0. */
  protocolsFromManifest: boolean;
  /** The manifest the protocols came from (…_manifest.json, or the repository root's terraform-registry-manifest.json). */
  manifest: { path: string; bytes: Uint8Array } | null;
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
  const { archives, manifests, sums, sigs, repositoryManifests } = collectReleaseFiles(input.paths, notes);

  // What is missing, in the order a user can fix it: the files themselves (paths above, archives or
  // executables here) before the names read from them, so an empty or wrong folder is named as such
  // rather than as "pass --type".
  const binaries = (input.binaries ?? []).map(parseBinaryOption);
  if (archives.length === 0 && binaries.length === 0) {
    throw new InputError(
      `no provider archives found in ${input.paths.join(', ') || '(no paths)'}: expected terraform-provider-TYPE_VERSION_OS_ARCH.zip files (goreleaser dist/) or --binary OS_ARCH=PATH`,
    );
  }
  const type = pickName('type', input.type, [...archives, ...manifests, ...sums, ...sigs], binaries);
  const version = pickName('version', input.version, [...archives, ...manifests, ...sums, ...sigs], binaries);
  for (const [list, what] of [
    [manifests, 'manifest'],
    [sums, 'SHA256SUMS'],
    [sigs, 'SHA256SUMS.sig'],
  ] as const) {
    if (list.length > 1) throw new InputError(`found ${list.length} ${what} files (${list.map((f) => f.path).join(', ')}); keep one`);
  }
  const sources = platformSources(archives, binaries);

  // Manifest → protocols: the release's own (…_manifest.json), else the repository root's, where goreleaser leaves it.
  const manifestPath = manifests[0]?.path ?? findRepositoryManifest(input.paths, repositoryManifests);
  const protocolsFromManifest = manifestPath !== undefined;
  const protocols = manifestPath ? readManifestProtocols(manifestPath) : ['5.0'];
  if (manifestPath && !manifests[0]) notes.push(`protocols ${JSON.stringify(protocols)} from ${manifestPath} (the repository's manifest)`);
  if (!protocolsFromManifest) {
    notes.push(
      `no terraform-provider-TYPE_VERSION_manifest.json: serving protocols ["5.0"] (add the manifest with metadata.protocol_versions for plugin protocol 6, or keep ${REPOSITORY_MANIFEST} beside dist/)`,
    );
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
    const planned = await planArchives(sources, { type, version, tempDir, concurrency: input.concurrency ?? 2, log, notes });
    if (shasums) await checkShasums(shasums, planned, { filename: manifestFilename(type, version), path: manifestPath });
    const manifest = manifestPath ? { path: manifestPath, bytes: readBytes(manifestPath) } : null;
    return { type, version, protocols, protocolsFromManifest, manifest, archives: planned, shasums, signature, notes, cleanup };
  } catch (error) {
    cleanup();
    throw error;
  }
}

/** The release files named by `paths` (files, or directories read by readDirectory), sorted by kind. Throws InputError for a file that is not one. */
function collectReleaseFiles(
  paths: readonly string[],
  notes: string[],
): { archives: Named[]; manifests: Named[]; sums: Named[]; sigs: Named[]; repositoryManifests: string[] } {
  const found = { archives: [] as Named[], manifests: [] as Named[], sums: [] as Named[], sigs: [] as Named[], repositoryManifests: [] as string[] };
  const consider = (path: string, fromDirectory: boolean) => {
    const name = basename(path);
    let match: RegExpExecArray | null;
    if (name === REPOSITORY_MANIFEST && !fromDirectory) found.repositoryManifests.push(path);
    else if ((match = ARCHIVE.exec(name))) found.archives.push({ path, type: match[1]!, version: match[2]! });
    else if ((match = MANIFEST.exec(name))) found.manifests.push({ path, type: match[1]!, version: match[2]! });
    else if ((match = SUMS.exec(name))) found.sums.push({ path, type: match[1]!, version: match[2]! });
    else if ((match = SIG.exec(name))) found.sigs.push({ path, type: match[1]!, version: match[2]! });
    else if (name.endsWith('.zip') && name.startsWith('terraform-provider-')) {
      throw new InputError(`${path}: archive names must be terraform-provider-TYPE_VERSION_OS_ARCH.zip (as goreleaser names them); rename it`);
    } else if (!fromDirectory) {
      throw new InputError(
        `${path}: not a provider release file (terraform-provider-TYPE_VERSION_OS_ARCH.zip, …_manifest.json, …_SHA256SUMS or …_SHA256SUMS.sig)`,
      );
    }
  };
  for (const raw of paths) {
    const path = resolve(raw);
    let stat;
    try {
      stat = statSync(path);
    } catch {
      throw new InputError(`${raw}: no such file or directory; pass a goreleaser dist/ directory or release files`);
    }
    if (stat.isDirectory()) readDirectory(raw, path, consider, notes);
    else consider(path, false);
  }
  return found;
}

/**
 * The repository's terraform-registry-manifest.json when no …_manifest.json was
 * given: one passed as a file, else the one in or beside (the parent of) a
 * directory given — goreleaser's dist/ sits in the repository root. Undefined
 * when there is none. Throws InputError when more than one is passed.
 */
function findRepositoryManifest(paths: readonly string[], given: readonly string[]): string | undefined {
  if (given.length > 1) throw new InputError(`found ${given.length} ${REPOSITORY_MANIFEST} files (${given.join(', ')}); keep one`);
  if (given[0]) return given[0];
  for (const raw of paths) {
    const dir = resolve(raw);
    if (!statSync(dir).isDirectory()) continue;
    for (const candidate of [join(dir, REPOSITORY_MANIFEST), join(dirname(dir), REPOSITORY_MANIFEST)]) {
      if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
    }
  }
  return undefined;
}

type PlatformSource = { platform: Platform; path: string; fromBinary: boolean };

/** One source per platform (archives, then --binary executables). Throws InputError for a platform given twice. */
function platformSources(archives: readonly Named[], binaries: readonly ReturnType<typeof parseBinaryOption>[]): PlatformSource[] {
  const sources: PlatformSource[] = [];
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
  return sources;
}

/**
 * Each source as a planned archive, sorted by file name: --binary executables
 * zipped into `tempDir`, every zip read and hashed, its executable found (a
 * note when it is not marked executable). Throws InputError as findExecutable.
 */
async function planArchives(
  sources: readonly PlatformSource[],
  o: { type: string; version: string; tempDir: string | null; concurrency: number; log: (line: string) => void; notes: string[] },
): Promise<PlannedArchive[]> {
  const { type, version, log } = o;
  const planned = await mapLimit(sources, o.concurrency, async (source) => {
    const filename = archiveFilename(type, version, source.platform);
    let path = source.path;
    if (source.fromBinary) {
      path = await zipBinary(source.path, o.tempDir!, { type, version, platform: source.platform });
      log(`zipped ${source.path} → ${filename}`);
    }
    const digest = await inspectArchive(path, progressLogger(log, basename(path)));
    const executable = findExecutable(path, digest, type, version, source.platform);
    const unixMode = digest.entries.find((e) => e.name === executable)?.unixMode;
    if (source.platform.os !== 'windows' && unixMode != null && (unixMode & 0o111) === 0) {
      o.notes.push(`${basename(path)}: ${executable} is not marked executable in the zip (mode ${unixMode.toString(8)}); Terraform may fail to start it`);
    }
    return { platform: source.platform, filename, path, digest, executable } satisfies PlannedArchive;
  });
  return planned.sort((a, b) => (a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0));
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
