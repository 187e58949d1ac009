import { parseProviderDocs } from '../../protocol/provider-docs';
import { InputError } from '../../protocol/errors';
import { parsePlatformName } from '../../protocol/platform';
import { manifestFilename, parseReleaseFilename, shasumsFilename, shasumsSignatureFilename } from '../../protocol/release-files';
import type { DeclaredFile, ProviderUpload } from '../../store/uploads/session';

/**
 * The manifest a client sends to start a provider publish
 * (`POST /v1/publish/providers/NS/TYPE/VERSION`):
 *
 *   {"protocols": ["6.0"],
 *    "files": [{"filename": "terraform-provider-TYPE_VERSION_OS_ARCH.zip", "size": N, "sha256": "<hex>", "h1": "h1:…"},
 *              {"filename": "terraform-provider-TYPE_VERSION_SHA256SUMS", "size": N, "sha256": "<hex>"},
 *              {"filename": "terraform-provider-TYPE_VERSION_SHA256SUMS.sig", "size": N, "sha256": "<hex>"},   (optional)
 *              {"filename": "terraform-provider-TYPE_VERSION_manifest.json", "size": N, "sha256": "<hex>"}],   (optional)
 *    "dry_run": false}
 *
 * Validated here before anything is stored, with the CLI's rules: release
 * file names of this TYPE and VERSION, at least one archive, no platform
 * twice, exactly one SHA256SUMS, at most one signature and one manifest
 * (goreleaser's terraform-registry-manifest.json under the name SHA256SUMS
 * lists it by; "protocols" then required, and checked against it at the
 * commit; it is not stored), sizes within limits.
 */

/** Largest archive accepted (R2's single-object limit is far above; this bounds a commit's work). */
export const MAX_ARCHIVE_BYTES = 2 * 1024 ** 3;
/** SHA256SUMS, its signature and the manifest are small text and binary files. */
export const MAX_SMALL_FILE_BYTES = 64 * 1024;
const MAX_FILES = 64;
const HEX64 = /^[0-9a-f]{64}$/;

export interface ProviderManifest {
  upload: ProviderUpload;
  dryRun: boolean;
}

/** Parses and validates a provider manifest for TYPE and VERSION (already validated). Throws InputError (400, or 413 for a file over its limit). */
export function parseProviderManifest(body: unknown, type: string, version: string): ProviderManifest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new InputError('the manifest must be a JSON object with "files" (and "protocols")');
  const m = body as Record<string, unknown>;
  const protocols = parseProtocols(m.protocols);
  if (!Array.isArray(m.files) || m.files.length === 0)
    throw new InputError('"files" must list the release files: the archives, SHA256SUMS and optionally SHA256SUMS.sig');
  if (m.files.length > MAX_FILES) throw new InputError(`"files" lists ${m.files.length} files; at most ${MAX_FILES}`);
  const files: DeclaredFile[] = [];
  const h1: Record<string, string> = {};
  const platforms = new Map<string, string>();
  const kinds = { shasums: 0, signature: 0, manifest: 0 };
  for (const [index, raw] of m.files.entries()) {
    const declared = parseDeclaredFile(raw, `files[${index}]`, type, version);
    const { file, kind } = declared;
    if (declared.platform) {
      const previous = platforms.get(declared.platform);
      if (previous) throw new InputError(`platform ${declared.platform} is given twice: ${previous} and ${file.filename}; keep one`);
      platforms.set(declared.platform, file.filename);
      if (declared.h1) h1[file.filename] = declared.h1;
    }
    if (kind !== 'archive') kinds[kind]++;
    if (files.some((other) => other.filename === file.filename)) throw new InputError(`${file.filename} is listed twice; keep one`);
    files.push(file);
  }
  if (platforms.size === 0) throw new InputError(`no provider archives among the files: expected terraform-provider-${type}_${version}_OS_ARCH.zip`);
  if (kinds.shasums !== 1) throw new InputError(`send exactly one ${shasumsFilename(type, version)} (the sha256sum lines of every archive)`);
  if (kinds.signature > 1) throw new InputError(`send at most one ${shasumsSignatureFilename(type, version)}`);
  if (kinds.manifest > 1) throw new InputError(`send at most one ${manifestFilename(type, version)}`);
  if (kinds.manifest === 1 && m.protocols === undefined)
    throw new InputError(`"protocols" must be sent with ${manifestFilename(type, version)}: its metadata.protocol_versions`);
  if (m.dry_run !== undefined && typeof m.dry_run !== 'boolean') throw new InputError('"dry_run" must be true or false');
  const docs = m.docs === undefined ? undefined : parseProviderDocs(m.docs, type);
  return {
    upload: { kind: 'provider', type, version, protocols, files, ...(Object.keys(h1).length ? { h1 } : {}), ...(docs ? { docs } : {}) },
    dryRun: m.dry_run === true,
  };
}

/** "protocols": a non-empty list like ["6.0"] (default ["5.0"], as Terraform assumes); InputError otherwise. */
function parseProtocols(raw: unknown): string[] {
  const protocols = raw === undefined ? ['5.0'] : raw;
  if (
    !Array.isArray(protocols) ||
    protocols.length === 0 ||
    protocols.length > 8 ||
    !protocols.every((p) => typeof p === 'string' && /^\d{1,3}\.\d{1,3}$/.test(p))
  ) {
    throw new InputError('"protocols" must be a non-empty list like ["5.0"] or ["6.0"]');
  }
  return protocols as string[];
}

/**
 * One entry of "files" (`where` names it in errors): a release file name of TYPE and VERSION, a positive size
 * within its kind's limit (413 over it), a lower-case hex SHA-256, and for an archive its platform and the
 * optional "h1:" hash. Throws InputError naming the entry and the field.
 */
function parseDeclaredFile(
  raw: unknown,
  where: string,
  type: string,
  version: string,
): { file: DeclaredFile; kind: 'archive' | 'shasums' | 'signature' | 'manifest'; platform?: string; h1?: string } {
  const f = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  if (typeof f.filename !== 'string') throw new InputError(`${where}.filename must be a string`);
  const filename = f.filename;
  const parsed = parseReleaseFilename(filename);
  if (!parsed) {
    throw new InputError(
      `${where}: "${filename.slice(0, 200)}" is not a release file name (terraform-provider-TYPE_VERSION_OS_ARCH.zip, …_SHA256SUMS, …_SHA256SUMS.sig or …_manifest.json)`,
    );
  }
  if (parsed.type !== type || parsed.version !== version) {
    throw new InputError(`${where}: ${filename} names ${parsed.type} ${parsed.version}, but this publish is ${type} ${version}`);
  }
  if (!Number.isSafeInteger(f.size) || (f.size as number) <= 0) throw new InputError(`${where}.size must be the file's size in bytes`);
  const size = f.size as number;
  if (typeof f.sha256 !== 'string' || !HEX64.test(f.sha256)) throw new InputError(`${where}.sha256 must be the file's SHA-256 in lower-case hex`);
  const limit = parsed.kind === 'archive' ? MAX_ARCHIVE_BYTES : MAX_SMALL_FILE_BYTES;
  if (size > limit) throw new InputError(`${filename} is ${size} bytes; at most ${limit} are accepted`, 413);
  const contentType = {
    archive: 'application/zip',
    shasums: 'text/plain; charset=utf-8',
    signature: 'application/pgp-signature',
    manifest: 'application/json',
  }[parsed.kind];
  const file = { filename, size, sha256: f.sha256, contentType };
  if (parsed.kind !== 'archive') return { file, kind: parsed.kind };
  const platform = parsePlatformName(parsed.platform!);
  if (f.h1 !== undefined && (typeof f.h1 !== 'string' || !/^h1:[A-Za-z0-9+/]{43}=$/.test(f.h1))) throw new InputError(`${where}.h1 must be an "h1:…" hash`);
  return { file, kind: 'archive', platform: `${platform.os}_${platform.arch}`, ...(f.h1 !== undefined ? { h1: f.h1 as string } : {}) };
}
