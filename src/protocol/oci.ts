import { InputError } from './errors';

/**
 * The OCI Distribution view's wire shapes (OCI Image and Distribution Specs
 * v1.1) as OpenTofu ≥ 1.10 requires them (`oci_mirror` providers and `oci://`
 * modules; ../shared/reference/oci-distribution-opentofu.md, docs/oci.md):
 * media types, the one way a manifest or index is serialised (so the bytes
 * and their digest never differ between writers), tags ↔ versions, the
 * repository names the view serves, references and the error body.
 */

export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_EMPTY = 'application/vnd.oci.empty.v1+json';
export const PROVIDER_ARTIFACT = 'application/vnd.opentofu.provider';
export const PROVIDER_TARGET_ARTIFACT = 'application/vnd.opentofu.provider-target';
export const MODULE_ARTIFACT = 'application/vnd.opentofu.modulepkg';
export const ZIP_LAYER = 'archive/zip';
export const TITLE_ANNOTATION = 'org.opencontainers.image.title';
export const VERSION_ANNOTATION = 'org.opencontainers.image.version';
/** Set on a version's index or module manifest when the version (or the whole package) was deprecated when it was first written. */
export const DEPRECATION_ANNOTATION = 'io.edge-registry.deprecation';

/** The empty config blob `{}` every artifact manifest here names (OCI's empty descriptor). */
export const EMPTY_CONFIG_BYTES = '{}';
export const EMPTY_CONFIG_DIGEST = 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a';

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  artifactType?: string;
  platform?: { os: string; architecture: string };
  annotations?: Record<string, string>;
}

const EMPTY_DESCRIPTOR: Descriptor = { mediaType: OCI_EMPTY, digest: EMPTY_CONFIG_DIGEST, size: 2 };

/** One zip as a layer: its SHA-256 (hex, the `zh:` hash for a provider), size and file name. */
export interface ZipLayer {
  sha256: string;
  size: number;
  filename: string;
}

function layer(zip: ZipLayer): Descriptor {
  return { mediaType: ZIP_LAYER, digest: `sha256:${zip.sha256}`, size: zip.size, annotations: { [TITLE_ANNOTATION]: zip.filename } };
}

/**
 * The image manifest of one provider platform: artifactType provider-target,
 * the empty config, exactly one archive/zip layer (the stored zip). Compact
 * JSON, keys in this order: the one serialisation.
 */
export function providerTargetManifest(zip: ZipLayer): string {
  return JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType: PROVIDER_TARGET_ARTIFACT, config: EMPTY_DESCRIPTOR, layers: [layer(zip)] });
}

/** One platform's manifest as the index lists it. */
export interface PlatformManifest {
  os: string;
  arch: string;
  digest: string;
  size: number;
}

/**
 * A provider version's image index: artifactType provider, one entry per
 * platform (sorted by os then arch, mediaType and artifactType on each, no
 * os.version), annotations with the version and a deprecation message when
 * given.
 */
export function providerIndex(version: string, platforms: readonly PlatformManifest[], deprecation?: string): string {
  const manifests = [...platforms]
    .sort((a, b) => (a.os === b.os ? compare(a.arch, b.arch) : compare(a.os, b.os)))
    .map((p) => ({
      mediaType: OCI_MANIFEST,
      digest: p.digest,
      size: p.size,
      platform: { os: p.os, architecture: p.arch },
      artifactType: PROVIDER_TARGET_ARTIFACT,
    }));
  return JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, artifactType: PROVIDER_ARTIFACT, manifests, annotations: annotations(version, deprecation) });
}

/** A module version's image manifest: artifactType modulepkg, the empty config, exactly one archive/zip layer. */
export function moduleManifest(version: string, zip: ZipLayer, deprecation?: string): string {
  return JSON.stringify({
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: MODULE_ARTIFACT,
    config: EMPTY_DESCRIPTOR,
    layers: [layer(zip)],
    annotations: annotations(version, deprecation),
  });
}

/** The referrers answer: an image index with no manifests (nothing here refers to another manifest). */
export const EMPTY_REFERRERS = JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: [] });

function annotations(version: string, deprecation: string | undefined): Record<string, string> {
  return { [VERSION_ANNOTATION]: version, ...(deprecation ? { [DEPRECATION_ANNOTATION]: deprecation } : {}) };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The tag of a version: `+` (build metadata) becomes `_`, which OCI tags allow and semver never holds. */
export function versionTag(version: string): string {
  return version.replaceAll('+', '_');
}

/** The version a tag names (`_` back to `+`); InputError (404: "not a version here") for a tag that is not one. */
export function tagVersion(tag: string): string {
  if (!/^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/.test(tag)) throw new InputError(`"${tag.slice(0, 130)}" is not an OCI tag`, 400);
  return tag.replaceAll('_', '+');
}

/** A manifest reference: a tag, or a sha256 digest (hex, lower case). */
export type Reference = { tag: string } | { digest: string };

/**
 * Parses a manifest reference. InputError (400) for a digest of another
 * algorithm or a malformed one, and for a string that is neither a tag nor a
 * digest.
 */
export function parseReference(raw: string): Reference {
  if (raw.includes(':')) return { digest: parseDigest(raw) };
  tagVersion(raw);
  return { tag: raw };
}

/** The hex of a `sha256:HEX` digest; InputError (400, DIGEST_INVALID) for anything else. */
export function parseDigest(raw: string): string {
  const match = /^sha256:([a-f0-9]{64})$/.exec(raw);
  if (!match) throw new InputError(`"${raw.slice(0, 80)}" is not a sha256 digest (sha256: and 64 lower-case hex digits)`, 400);
  return match[1]!;
}

/** OCI error codes this registry answers with. */
export type OciErrorCode =
  | 'NAME_UNKNOWN'
  | 'MANIFEST_UNKNOWN'
  | 'BLOB_UNKNOWN'
  | 'UNAUTHORIZED'
  | 'DENIED'
  | 'UNSUPPORTED'
  | 'NAME_INVALID'
  | 'DIGEST_INVALID'
  | 'TAG_INVALID'
  | 'TOOMANYREQUESTS';

/** The OCI error body: {"errors":[{"code","message"}]}. */
export function ociErrorBody(code: OciErrorCode, message: string): string {
  return JSON.stringify({ errors: [{ code, message }] });
}

/**
 * `tags` in lexical (byte) order, cut after `last` and to `n` entries; `more`
 * when entries were left out after the cut (the caller then sends a Link to
 * the next page).
 */
export function pageOfTags(tags: readonly string[], n: number | null, last: string | null): { tags: string[]; more: boolean } {
  const sorted = [...new Set(tags)].sort(compare);
  const after = last === null ? sorted : sorted.filter((tag) => tag > last);
  if (n === null || after.length <= n) return { tags: after, more: false };
  return { tags: after.slice(0, n), more: true };
}

/** The `pull` scope of repository `name` as a token endpoint names it. */
export const pullScope = (name: string) => `repository:${name}:pull`;

/** The repository names a `scope` query parameter asks to pull (`repository:NAME:pull[,…]`); others are ignored. */
export function pulledRepositories(scopes: readonly string[]): string[] {
  const names: string[] = [];
  for (const scope of scopes) {
    for (const part of scope.split(' ')) {
      const match = /^repository:([a-z0-9][a-z0-9._/-]{0,250}):([a-z,*]+)$/.exec(part);
      if (match && match[2]!.split(',').some((action) => action === 'pull' || action === '*')) names.push(match[1]!);
    }
  }
  return [...new Set(names)];
}

/** What an OCI repository name of this view names. */
export type OciRepository =
  | { kind: 'provider'; hostname: string; namespace: string; type: string }
  | { kind: 'module'; namespace: string; name: string; system: string };

/**
 * The repository a wire name names: `providers/HOST/NS/TYPE` (any stored
 * hostname: ours, mirrored and pulled-through upstreams) or
 * `modules/NS/NAME/SYSTEM` (this registry's modules); null for anything
 * else. Parts are lower-cased, as every address here is; their own rules are
 * the route's to check.
 */
export function parseRepositoryName(name: string): OciRepository | null {
  const parts = name.toLowerCase().split('/');
  if (parts.length !== 4 || parts.some((part) => part === '')) return null;
  const [kind, a, b, c] = parts as [string, string, string, string];
  if (kind === 'providers') return { kind: 'provider', hostname: a, namespace: b, type: c };
  if (kind === 'modules') return { kind: 'module', namespace: a, name: b, system: c };
  return null;
}
