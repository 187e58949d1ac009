import type { Platform } from './platform';

/**
 * The file names of a provider release, as goreleaser writes them and
 * Terraform's registry protocol names them — the one place that knows them:
 *
 *   terraform-provider-TYPE_VERSION_OS_ARCH.zip      an archive (one per platform)
 *   terraform-provider-TYPE_VERSION_SHA256SUMS       `sha256sum` lines of every archive
 *   terraform-provider-TYPE_VERSION_SHA256SUMS.sig   its detached OpenPGP signature
 *   terraform-provider-TYPE_VERSION_manifest.json    goreleaser's manifest (protocol versions)
 *   terraform-provider-TYPE_vVERSION[.exe]           the executable inside an archive
 *
 * TYPE has no underscore (letters, digits, dashes) and neither has a semantic
 * version, so an underscore always ends a part.
 */

export const RELEASE_FILE_PREFIX = 'terraform-provider-';

export const archiveFilename = (type: string, version: string, platform: Platform) =>
  `${RELEASE_FILE_PREFIX}${type}_${version}_${platform.os}_${platform.arch}.zip`;

export const shasumsFilename = (type: string, version: string) => `${RELEASE_FILE_PREFIX}${type}_${version}_SHA256SUMS`;

export const shasumsSignatureFilename = (type: string, version: string) => `${shasumsFilename(type, version)}.sig`;

export const manifestFilename = (type: string, version: string) => `${RELEASE_FILE_PREFIX}${type}_${version}_manifest.json`;

/** The executable's name inside an archive: terraform-provider-TYPE_vVERSION, `.exe` on windows. */
export const executableName = (type: string, version: string, platform: Pick<Platform, 'os'>) =>
  `${RELEASE_FILE_PREFIX}${type}_v${version}${platform.os === 'windows' ? '.exe' : ''}`;

/** What a release file is. */
export type ReleaseFileKind = 'archive' | 'shasums' | 'signature' | 'manifest';

/** A release file name taken apart; `platform` ("os_arch", as written) only for archives. */
export interface ReleaseFileName {
  kind: ReleaseFileKind;
  type: string;
  version: string;
  platform?: string;
}

/**
 * The name patterns, capturing TYPE and VERSION (and "os_arch" for archives),
 * for code that sorts a directory of release files.
 */
export const RELEASE_FILE_PATTERNS: Record<ReleaseFileKind, RegExp> = {
  archive: /^terraform-provider-([^_]+)_([^_]+)_([^_]+_[^_]+)\.zip$/,
  shasums: /^terraform-provider-([^_]+)_([^_]+)_SHA256SUMS$/,
  signature: /^terraform-provider-([^_]+)_([^_]+)_SHA256SUMS\.sig$/,
  manifest: /^terraform-provider-([^_]+)_([^_]+)_manifest\.json$/,
};

/**
 * Takes a release file name apart (the type, version and platform are as
 * written, not validated). Null — never throws — when the name is not shaped
 * like any release file.
 */
export function parseReleaseFilename(name: string): ReleaseFileName | null {
  for (const kind of Object.keys(RELEASE_FILE_PATTERNS) as ReleaseFileKind[]) {
    const match = RELEASE_FILE_PATTERNS[kind].exec(name);
    if (match) return { kind, type: match[1]!, version: match[2]!, ...(match[3] === undefined ? {} : { platform: match[3] }) };
  }
  return null;
}

/**
 * The kind of a file the registry serves for provider TYPE at VERSION: an
 * archive whose platform is lower-case letters and digits, SHA256SUMS or its
 * signature. Null (never throws) for any other name, a manifest included.
 */
export function servedReleaseFileKind(type: string, version: string, filename: string): Exclude<ReleaseFileKind, 'manifest'> | null {
  const parsed = parseReleaseFilename(filename);
  if (!parsed || parsed.type !== type || parsed.version !== version || parsed.kind === 'manifest') return null;
  if (parsed.kind === 'archive' && !/^[a-z0-9]+_[a-z0-9]+$/.test(parsed.platform!)) return null;
  return parsed.kind;
}

/** Content-Type of each served release file. */
export const RELEASE_FILE_CONTENT_TYPE: Record<Exclude<ReleaseFileKind, 'manifest'>, string> = {
  archive: 'application/zip',
  shasums: 'text/plain; charset=utf-8',
  signature: 'application/pgp-signature',
};

/**
 * The executable names an archive may hold for TYPE, VERSION and an os:
 * executableName, or with goreleaser's `_xN` protocol suffix before `.exe`
 * (terraform-provider-TYPE_vVERSION_x5).
 */
export function executableNamePattern(type: string, version: string, platform: Pick<Platform, 'os'>): RegExp {
  const suffix = platform.os === 'windows' ? '.exe' : '';
  return new RegExp(`^${escapeRegExp(`${RELEASE_FILE_PREFIX}${type}_v${version}`)}(?:_x[0-9]+)?${escapeRegExp(suffix)}$`);
}

/** An executable name with any type and version (for --binary): captures type and version. */
export const ANY_EXECUTABLE_NAME = /^terraform-provider-([^_]+)_v([^_]+?)(?:\.exe)?$/;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
