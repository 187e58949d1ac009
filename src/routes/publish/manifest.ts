import { parseProviderDocs } from '../../protocol/provider-docs';
import { InputError } from '../../protocol/errors';
import { manifestFilename, parseReleaseFilename, shasumsFilename } from '../../protocol/release-files';
import { checkReleaseFileList, MAX_RELEASE_FILES } from '../../protocol/provider-release';
import { sha256Hex } from '../../protocol/hashes';
import { fromBase64 } from '../../bytes';
import type { ProviderUpload } from '../../store/uploads/session';

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
 * A file other than an archive (each at most 64 KiB, the pipeline's limit) may carry its bytes as "content" (base64): it
 * is then sent with the manifest and needs no upload (the session does not list it; the commit takes its bytes
 * from the session). Its size and SHA-256 are checked here against the declared ones.
 *
 * Validated here before anything is stored: each entry's shape, then the
 * first step of the release pipeline every way in runs
 * (src/protocol/provider-release.ts checkReleaseFileList: names of this TYPE
 * and VERSION, at most 64 files, sizes within limits, no platform twice, at
 * most one signature and one manifest), and what the wire requires: exactly
 * one SHA256SUMS, and "protocols" when the manifest is sent (goreleaser's
 * terraform-registry-manifest.json under the name SHA256SUMS lists it by; the
 * commit checks both against it; it is not stored).
 */

const HEX64 = /^[0-9a-f]{64}$/;
const CONTENT_TYPE = { archive: 'application/zip', shasums: 'text/plain; charset=utf-8', signature: 'application/pgp-signature', manifest: 'application/json' };

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
  if (m.files.length > MAX_RELEASE_FILES) throw new InputError(`"files" lists ${m.files.length} files; at most ${MAX_RELEASE_FILES}`);
  const declared = m.files.map((raw, index) => parseDeclaredFile(raw, `files[${index}]`));
  const list = checkReleaseFileList(
    type,
    version,
    declared.map(({ filename, size, sha256 }) => ({ filename, size, sha256Hex: sha256, shown: filename })),
  );
  if (!list.shasums) throw new InputError(`send exactly one ${shasumsFilename(type, version)} (the sha256sum lines of every archive)`);
  if (list.manifest && m.protocols === undefined)
    throw new InputError(`"protocols" must be sent with ${manifestFilename(type, version)}: its metadata.protocol_versions`);
  if (m.dry_run !== undefined && typeof m.dry_run !== 'boolean') throw new InputError('"dry_run" must be true or false');
  const docs = m.docs === undefined ? undefined : parseProviderDocs(m.docs, type);
  const h1: Record<string, string> = {};
  for (const file of declared) if (file.h1 !== undefined) h1[file.filename] = file.h1;
  const files = declared.map(({ filename, size, sha256, content }, index) => {
    const kind = parseReleaseFilename(filename)!.kind;
    if (content !== undefined) checkInlineContent(content, { filename, size, sha256 }, kind, `files[${index}]`);
    return { filename, size, sha256, contentType: CONTENT_TYPE[kind], ...(content !== undefined ? { content } : {}) };
  });
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
 * One entry of "files" (`where` names it in errors): a string file name, a positive size, a lower-case hex
 * SHA-256, and an optional "h1:" hash. Throws InputError naming the entry and the field; the names, kinds
 * and limits are the pipeline's (checkReleaseFileList).
 */
function parseDeclaredFile(raw: unknown, where: string): { filename: string; size: number; sha256: string; h1?: string; content?: string } {
  const f = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  if (typeof f.filename !== 'string') throw new InputError(`${where}.filename must be a string`);
  if (!Number.isSafeInteger(f.size) || (f.size as number) <= 0) throw new InputError(`${where}.size must be the file's size in bytes`);
  if (typeof f.sha256 !== 'string' || !HEX64.test(f.sha256)) throw new InputError(`${where}.sha256 must be the file's SHA-256 in lower-case hex`);
  if (f.h1 !== undefined && (typeof f.h1 !== 'string' || !/^h1:[A-Za-z0-9+/]{43}=$/.test(f.h1))) throw new InputError(`${where}.h1 must be an "h1:…" hash`);
  if (f.content !== undefined && typeof f.content !== 'string') throw new InputError(`${where}.content must be the file's bytes in base64`);
  return {
    filename: f.filename,
    size: f.size as number,
    sha256: f.sha256,
    ...(f.h1 !== undefined ? { h1: f.h1 as string } : {}),
    ...(f.content !== undefined ? { content: f.content as string } : {}),
  };
}

/**
 * A file's bytes sent with the manifest (`content`, base64): not an archive (archives are uploaded; the other
 * files' size limit is checkReleaseFileList's), and exactly the declared size and SHA-256. Throws InputError
 * (`where` names the entry) otherwise.
 */
function checkInlineContent(content: string, file: { filename: string; size: number; sha256: string }, kind: string, where: string): void {
  if (kind === 'archive') throw new InputError(`${where}: ${file.filename} is an archive; upload it (PUT) instead of sending its "content"`);
  const bytes = inlineBytes(content);
  if (bytes === null) throw new InputError(`${where}.content must be the file's bytes in base64`);
  if (bytes.byteLength !== file.size || sha256Hex(bytes) !== file.sha256)
    throw new InputError(
      `${where}: the "content" of ${file.filename} is not the file declared (its size ${file.size} and SHA-256 ${file.sha256}); send the file's own bytes`,
    );
}

/** The bytes of a file sent with the manifest (base64, padded), or null when `content` is not base64. */
export function inlineBytes(content: string): Uint8Array | null {
  if (content.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(content)) return null;
  return fromBase64(content);
}
