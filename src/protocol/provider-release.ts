import { mapLimit } from '../concurrency';
import { InputError } from './errors';
import { formatShasums } from './hashes';
import { parsePlatformName, type Platform } from './platform';
import { checkProviderExecutable, executableProblem } from './provider-executable';
import { manifestFilename, parseReleaseFilename, RELEASE_FILE_PATTERNS, shasumsFilename, type ReleaseFileKind } from './release-files';
import { checkManifestLine, parseManifestProtocols } from './release-manifest';
import { checkReleaseShasums } from './release-shasums';
import type { PublishedPlatform } from './publish-api';

/**
 * The one pipeline of a provider release's checks, run by every way in with
 * the same inputs: the publish CLI on the files of a dist/ directory
 * (scripts/lib/provider/release.ts, also before `--registry` sends them) and
 * the Worker's publish API on the uploaded files (src/routes/publish/manifest.ts
 * runs its first step when a publish starts, provider-commit.ts the whole
 * sequence at the commit). In order:
 *
 *   1. the file list (checkReleaseFileList): release file names of TYPE and
 *      VERSION, at most MAX_RELEASE_FILES files, each within its size limit,
 *      at least one archive, no platform twice, at most one SHA256SUMS,
 *      signature and manifest, no signature without SHA256SUMS;
 *   2. the protocols: the manifest's metadata.protocol_versions (equal to the
 *      declared ones when a client declared them), else the declared ones,
 *      else ["5.0"] with a note;
 *   3. each archive, through the caller's zip reader: the provider executable
 *      at the top level (a note when it is not marked executable), its `h1:`
 *      (equal to a declared one);
 *   4. a SHA256SUMS: every archive's line with its SHA-256, no line for an
 *      archive not given, the manifest's line against the manifest (a listed
 *      manifest that was not given is refused).
 *
 * The signature is checked by the caller against the namespace's keys (it
 * reads them from storage, under the provider's lease for the CLI).
 */

/** Largest archive accepted (R2's single-object limit is far above; this bounds a commit's work). */
export const MAX_ARCHIVE_BYTES = 2 * 1024 ** 3;
/** SHA256SUMS, its signature and the manifest are small text and binary files. */
export const MAX_SMALL_FILE_BYTES = 64 * 1024;
/** Files in one release (13 platforms from the scaffolding config, plus SHA256SUMS, signature and manifest, fit several times). */
export const MAX_RELEASE_FILES = 64;

/** A file of a release as given: its name, size and SHA-256, and how a refusal names it (its path, for the CLI). */
export interface GivenReleaseFile {
  filename: string;
  size: number;
  sha256Hex: string;
  shown: string;
}

/** An archive of the list, with its platform. */
export interface ListedReleaseArchive {
  file: GivenReleaseFile;
  platform: Platform;
}

/** A release's files sorted by kind (checkReleaseFileList). */
export interface ReleaseFileList {
  /** Sorted by file name. */
  archives: ListedReleaseArchive[];
  shasums: GivenReleaseFile | null;
  signature: GivenReleaseFile | null;
  manifest: GivenReleaseFile | null;
}

/** What the caller's zip reader found in an archive (src/protocol/zip-reader.ts, over R2 or a file). */
export interface ReleaseArchiveContents {
  entries: readonly { name: string; isDirectory: boolean; size: number; unixMode: number | null }[];
  h1: string;
}

export interface ProviderReleaseInput {
  type: string;
  version: string;
  files: readonly GivenReleaseFile[];
  /** An archive's entries and `h1:`; throws InputError for a zip the registry does not accept. */
  readArchive(file: GivenReleaseFile): Promise<ReleaseArchiveContents>;
  /** The bytes of a small file (SHA256SUMS, signature, manifest). */
  readSmall(file: GivenReleaseFile): Promise<Uint8Array>;
  /** The protocols a client declared (the publish API's "protocols"). */
  declaredProtocols?: readonly string[];
  /** The `h1:` a client declared per archive file name. */
  declaredH1?: Readonly<Record<string, string>>;
  /** Archives read at the same time (default 2). */
  concurrency?: number;
}

/** An archive as it will be published (the version record's package): publish-api.ts's PublishedPlatform. */
export type CheckedPackage = PublishedPlatform;

export interface CheckedProviderRelease {
  protocols: string[];
  /** True when the protocols came from the manifest. */
  protocolsFromManifest: boolean;
  /** Sorted by file name. */
  packages: CheckedPackage[];
  /** The given SHA256SUMS, as given (served byte for byte, so a publisher's signature keeps verifying); null when none was given. */
  shasums: { file: GivenReleaseFile; bytes: Uint8Array } | null;
  signature: { file: GivenReleaseFile; bytes: Uint8Array } | null;
  manifest: GivenReleaseFile | null;
  /** Notes for the publisher (not refusals). */
  notes: string[];
}

/**
 * Runs the whole sequence on `input` (see above) and returns the release as
 * it will be published. Throws InputError naming the file (as `shown`) and
 * the fix at the first problem, in the order above — status 413 for a file
 * over its size limit. Reads only through `input`; writes nothing.
 */
export async function checkProviderRelease(input: ProviderReleaseInput): Promise<CheckedProviderRelease> {
  const { type, version } = input;
  const list = checkReleaseFileList(type, version, input.files);
  const notes: string[] = [];

  const manifestBytes = list.manifest ? await input.readSmall(list.manifest) : null;
  const protocols = releaseProtocols(manifestBytes, list.manifest, input.declaredProtocols, notes);

  const packages = await mapLimit(list.archives, input.concurrency ?? 2, async ({ file, platform }) => {
    const label = `archive ${file.shown}`;
    const contents = await input.readArchive(file);
    const check = checkProviderExecutable(contents.entries, { type, version, platform });
    if (!check.ok) throw new InputError(executableProblem(check, label, 'publisher'));
    const unixMode = contents.entries.find((e) => e.name === check.name)?.unixMode;
    if (platform.os !== 'windows' && unixMode != null && (unixMode & 0o111) === 0) {
      notes.push(`${file.filename}: ${check.name} is not marked executable in the zip (mode ${unixMode.toString(8)}); Terraform may fail to start it`);
    }
    const declared = input.declaredH1?.[file.filename];
    if (declared && declared !== contents.h1) throw new InputError(`${label}: its contents hash to ${contents.h1}, the manifest says ${declared}`);
    return { os: platform.os, arch: platform.arch, filename: file.filename, shasum: file.sha256Hex, h1: contents.h1, size: file.size };
  });

  let shasums: CheckedProviderRelease['shasums'] = null;
  if (list.shasums) {
    const bytes = await input.readSmall(list.shasums);
    const listed = list.archives.map(({ file }) => ({ filename: file.filename, sha256Hex: file.sha256Hex, shown: file.shown }));
    const entries = checkReleaseShasums(bytes, listed, list.shasums.shown, (filename) => RELEASE_FILE_PATTERNS.archive.test(filename));
    checkManifestLine(
      entries,
      manifestFilename(type, version),
      list.manifest && { sha256Hex: list.manifest.sha256Hex, shown: list.manifest.shown },
      list.shasums.shown,
    );
    shasums = { file: list.shasums, bytes };
  }
  const signature = list.signature ? { file: list.signature, bytes: await input.readSmall(list.signature) } : null;
  return { protocols, protocolsFromManifest: manifestBytes !== null, packages, shasums, signature, manifest: list.manifest, notes };
}

const KIND_NAME = { shasums: 'SHA256SUMS', signature: 'SHA256SUMS.sig', manifest: 'manifest' } as const;

/**
 * Step 1: the files sorted by kind. Throws InputError naming the file and the
 * fix for a name that is not a release file of TYPE and VERSION, more than
 * MAX_RELEASE_FILES files, a file over its size limit (413), no archive, a
 * platform twice (an archive listed twice), more than one SHA256SUMS,
 * signature or manifest, or a signature without SHA256SUMS.
 */
export function checkReleaseFileList(type: string, version: string, files: readonly GivenReleaseFile[]): ReleaseFileList {
  if (files.length > MAX_RELEASE_FILES) throw new InputError(`the release has ${files.length} files; at most ${MAX_RELEASE_FILES} are accepted`);
  const list: ReleaseFileList = { archives: [], shasums: null, signature: null, manifest: null };
  const platforms = new Map<string, string>();
  for (const file of files) {
    const parsed = parseReleaseFilename(file.filename);
    if (!parsed) {
      throw new InputError(
        `${file.shown}: "${file.filename.slice(0, 200)}" is not a release file name (terraform-provider-TYPE_VERSION_OS_ARCH.zip, …_SHA256SUMS, …_SHA256SUMS.sig or …_manifest.json)`,
      );
    }
    if (parsed.type !== type || parsed.version !== version) {
      throw new InputError(`${file.shown}: ${file.filename} names ${parsed.type} ${parsed.version}, but this publish is ${type} ${version}`);
    }
    const limit = parsed.kind === 'archive' ? MAX_ARCHIVE_BYTES : MAX_SMALL_FILE_BYTES;
    if (file.size > limit) throw new InputError(`${file.shown} is ${file.size} bytes; at most ${limit} are accepted`, 413);
    if (parsed.kind === 'archive') {
      const platform = platformOf(file, parsed.platform!);
      const key = `${platform.os}_${platform.arch}`;
      const previous = platforms.get(key);
      if (previous) throw new InputError(`platform ${key} is given twice: ${previous} and ${file.shown}; keep one`);
      platforms.set(key, file.shown);
      list.archives.push({ file, platform });
      continue;
    }
    const kind = parsed.kind as Exclude<ReleaseFileKind, 'archive'>;
    if (list[kind]) throw new InputError(`found two ${KIND_NAME[kind]} files (${list[kind]!.shown}, ${file.shown}); keep one`);
    list[kind] = file;
  }
  if (list.archives.length === 0) throw new InputError(`no provider archives among the files: expected terraform-provider-${type}_${version}_OS_ARCH.zip`);
  if (list.signature && !list.shasums) {
    throw new InputError(
      `${list.signature.shown}: a signature without its ${shasumsFilename(type, version)}; add the SHA256SUMS file it signs, or remove the .sig`,
    );
  }
  list.archives.sort((a, b) => (a.file.filename < b.file.filename ? -1 : a.file.filename > b.file.filename ? 1 : 0));
  return list;
}

/** The SHA256SUMS a release without one is published with: one sorted line per archive (deterministic, so a re-run makes the same bytes). */
export function generatedShasums(packages: readonly CheckedPackage[]): Uint8Array {
  return new TextEncoder().encode(formatShasums(packages.map((p) => ({ filename: p.filename, sha256Hex: p.shasum }))));
}

/** Step 2: the manifest's protocols (equal to the declared ones when both), else the declared ones, else ["5.0"] with a note. */
function releaseProtocols(manifest: Uint8Array | null, file: GivenReleaseFile | null, declared: readonly string[] | undefined, notes: string[]): string[] {
  if (manifest && file) {
    const protocols = parseManifestProtocols(manifest, file.shown);
    if (declared && JSON.stringify([...new Set(declared)]) !== JSON.stringify(protocols)) {
      throw new InputError(`"protocols" ${JSON.stringify(declared)} differs from ${file.filename}'s protocol_versions ${JSON.stringify(protocols)}`);
    }
    return protocols;
  }
  if (declared) return [...declared];
  notes.push(
    'no terraform-provider-TYPE_VERSION_manifest.json: serving protocols ["5.0"] (add the manifest with metadata.protocol_versions for plugin protocol 6, or keep terraform-registry-manifest.json beside dist/)',
  );
  return ['5.0'];
}

function platformOf(file: GivenReleaseFile, name: string): Platform {
  try {
    return parsePlatformName(name);
  } catch (error) {
    throw new InputError(`${file.shown}: ${(error as Error).message}; rename the archive`);
  }
}
