import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { InputError, type Platform } from '../../../src/protocol/index';
import { RELEASE_FILE_PATTERNS, archiveFilename, manifestFilename, shasumsFilename, shasumsSignatureFilename } from '../../../src/protocol/release-files';
import { REPOSITORY_MANIFEST } from '../../../src/protocol/release-manifest';
import { mapLimit } from '../../../src/concurrency';
import { inspectArchive, type ProgressSink } from './archive';
import type { PlannedArchive } from './planned-archive';
import { parseBinaryOption, pickName, platformFrom, readDirectory, type BinaryOption, type Named } from './release-inputs';
import { checkProviderRelease, type GivenReleaseFile } from '../../../src/protocol/provider-release';
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
 * Validates the input and returns the plan. Finds the files (names, the
 * type and version they agree on, --binary executables zipped the way
 * goreleaser does, every zip read and hashed), then runs the one pipeline of
 * a release's checks (src/protocol/provider-release.ts) that the publish API
 * runs on the same files. Throws InputError for the first problem, naming the
 * file and the fix. Writes nothing but temporary zips for --binary (removed
 * by cleanup(), also on error).
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
  // The manifest: the release's own (…_manifest.json), else the repository root's, where goreleaser leaves it.
  const manifestPaths =
    manifests.length > 0 ? manifests.map((m) => m.path) : [findRepositoryManifest(input.paths, repositoryManifests)].flatMap((p) => p ?? []);

  const tempDir = binaries.length > 0 ? mkdtempSync(join(tmpdir(), 'edge-registry-zip-')) : null;
  const cleanup = () => {
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  };
  try {
    const sources = [
      ...archives.map((a) => ({ platform: platformFrom(a.path, ARCHIVE.exec(basename(a.path))![3]!), path: a.path, shown: a.path, binary: null })),
      ...binaries.map((b) => ({ platform: b.platform, path: b.path, shown: `--binary ${b.raw}`, binary: b })),
    ];
    const planned = await planArchives(sources, { type, version, tempDir, concurrency: input.concurrency ?? 2, log });
    const small = new Map<string, { path: string; bytes: Uint8Array }>();
    const smallFile = (filename: string, path: string): GivenReleaseFile => {
      const bytes = readBytes(path);
      small.set(filename, { path, bytes });
      return { filename, size: bytes.byteLength, sha256Hex: createHash('sha256').update(bytes).digest('hex'), shown: path };
    };
    const files: GivenReleaseFile[] = [
      ...planned.map((a) => ({ filename: a.filename, size: a.digest.size, sha256Hex: a.digest.sha256Hex, shown: a.shown })),
      ...sums.map((f) => smallFile(shasumsFilename(type, version), f.path)),
      ...sigs.map((f) => smallFile(shasumsSignatureFilename(type, version), f.path)),
      ...manifestPaths.map((path) => smallFile(manifestFilename(type, version), path)),
    ];
    const digests = new Map(planned.map((a) => [a.filename, a.digest]));
    const checked = await checkProviderRelease({
      type,
      version,
      files,
      readArchive: async (file) => digests.get(file.filename)!,
      readSmall: async (file) => small.get(file.filename)!.bytes,
    });
    if (checked.manifest && manifests.length === 0)
      notes.push(`protocols ${JSON.stringify(checked.protocols)} from ${checked.manifest.shown} (the repository's manifest)`);
    const pathOf = (file: GivenReleaseFile | undefined) => (file ? { path: file.shown, bytes: small.get(file.filename)!.bytes } : null);
    return {
      type,
      version,
      protocols: checked.protocols,
      protocolsFromManifest: checked.protocolsFromManifest,
      manifest: pathOf(checked.manifest ?? undefined),
      archives: planned.map(({ shown: _, ...a }) => a).sort((a, b) => (a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0)),
      shasums: pathOf(checked.shasums?.file),
      signature: pathOf(checked.signature?.file),
      notes: [...notes, ...checked.notes],
      cleanup,
    };
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

type PlatformSource = { platform: Platform; path: string; shown: string; binary: BinaryOption | null };

/**
 * Each source as a planned archive: --binary executables zipped into
 * `tempDir`, every zip read and hashed (inspectArchive: InputError for a zip
 * the registry does not accept). The checks are the pipeline's.
 */
async function planArchives(
  sources: readonly PlatformSource[],
  o: { type: string; version: string; tempDir: string | null; concurrency: number; log: (line: string) => void },
): Promise<(PlannedArchive & { shown: string })[]> {
  const { type, version, log } = o;
  return mapLimit(sources, o.concurrency, async (source) => {
    const filename = archiveFilename(type, version, source.platform);
    let path = source.path;
    if (source.binary) {
      path = await zipBinary(source.path, o.tempDir!, { type, version, platform: source.platform });
      log(`zipped ${source.path} → ${filename}`);
    }
    const digest = await inspectArchive(path, progressLogger(log, basename(path)));
    return { platform: source.platform, filename, path, digest, shown: source.binary ? source.shown : path };
  });
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
