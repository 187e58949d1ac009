import type { Platform } from './platform';
import { asArray, asNumber, asObject, asString, asStringArray, optional, type JsonObject } from './shape';

/**
 * The providers.v1 wire shapes (Terraform's provider registry protocol, with
 * OpenTofu's `packages` extension): the types every party uses — the Worker
 * builds bodies with the builders, the tests' installer parses responses
 * with the parsers — so a field is named in one place.
 */

/** One entry of "list available versions". */
export interface ProviderVersionEntry {
  version: string;
  /** "Recommended" by the protocol; this registry always sends it. */
  protocols?: string[];
  platforms?: Platform[];
}

/** GET :namespace/:type/versions — "list available versions". */
export interface ProviderVersionsResponse {
  versions: ProviderVersionEntry[];
  /** Optional messages a client shows to the user. */
  warnings?: string[];
}

/** A public signing key in `signing_keys.gpg_public_keys`. */
export interface GpgPublicKey {
  /** 16 upper-case hex digits. */
  key_id: string;
  ascii_armor: string;
  trust_signature?: string;
  source?: string;
  source_url?: string;
}

/** A public signing key as stored and served in `signing_keys.gpg_public_keys` (the protocol's type, its two fields we use). */
export type SigningKey = Pick<GpgPublicKey, 'key_id' | 'ascii_armor'>;

/** OpenTofu's per-platform hashes: "zh:…" (the zip) and "h1:…" (its contents), and the zip's size. */
export interface PackageHashes {
  hashes: string[];
  package_size?: number;
}

/** GET :namespace/:type/:version/download/:os/:arch — "find a provider package". */
export interface ProviderPackageResponse {
  protocols: string[];
  os: string;
  arch: string;
  filename: string;
  download_url: string;
  shasums_url: string;
  shasums_signature_url: string;
  /** Hex SHA-256 of the zip. */
  shasum: string;
  signing_keys: { gpg_public_keys: GpgPublicKey[] };
  /** OpenTofu: every platform of this version, keyed "os_arch". */
  packages?: Record<string, PackageHashes>;
}

/** The body of "list available versions" for entries already in the order to serve (ascending); `warnings` only when there are some. */
export function providerVersionsBody(entries: readonly Required<ProviderVersionEntry>[], warnings: readonly string[] = []): string {
  return JSON.stringify({
    versions: entries.map(({ version, protocols, platforms }) => ({
      version,
      protocols,
      platforms: platforms.map(({ os, arch }) => ({ os, arch })),
    })),
    ...(warnings.length > 0 ? { warnings: [...warnings] } : {}),
  } satisfies ProviderVersionsResponse);
}

/** The body of "find a provider package"; fields are written in the protocol's order. */
export function providerPackageBody(response: Required<ProviderPackageResponse>): string {
  return JSON.stringify({
    protocols: response.protocols,
    os: response.os,
    arch: response.arch,
    filename: response.filename,
    download_url: response.download_url,
    shasums_url: response.shasums_url,
    shasums_signature_url: response.shasums_signature_url,
    shasum: response.shasum,
    signing_keys: response.signing_keys,
    packages: response.packages,
  } satisfies ProviderPackageResponse);
}

/**
 * Parses a "list available versions" response. Throws WireShapeError naming
 * the first field that is missing or of the wrong type; extra fields are
 * ignored, as clients do.
 */
export function parseProviderVersionsResponse(json: unknown): ProviderVersionsResponse {
  const body = asObject(json, 'versions response');
  return {
    versions: asArray(body.versions, 'versions').map((value, index) => {
      const where = `versions[${index}]`;
      const entry = asObject(value, where);
      return {
        version: asString(entry.version, `${where}.version`),
        protocols: optional(entry.protocols, `${where}.protocols`, asStringArray),
        platforms: optional(entry.platforms, `${where}.platforms`, (list, at) => asArray(list, at).map((p, i) => parsePlatformObject(p, `${at}[${i}]`))),
      };
    }),
    warnings: optional(body.warnings, 'warnings', asStringArray),
  };
}

/**
 * Parses a "find a provider package" response. Throws WireShapeError naming
 * the first (in protocol order) required field that is missing or of the wrong type.
 */
export function parseProviderPackageResponse(json: unknown): ProviderPackageResponse {
  const body = asObject(json, 'download response');
  const str = (name: keyof ProviderPackageResponse) => asString(body[name], name);
  return {
    protocols: asStringArray(body.protocols, 'protocols'),
    os: str('os'),
    arch: str('arch'),
    filename: str('filename'),
    download_url: str('download_url'),
    shasums_url: str('shasums_url'),
    shasums_signature_url: str('shasums_signature_url'),
    shasum: str('shasum'),
    signing_keys: {
      gpg_public_keys: asArray(asObject(body.signing_keys, 'signing_keys').gpg_public_keys, 'signing_keys.gpg_public_keys').map((value, index) => {
        const where = `signing_keys.gpg_public_keys[${index}]`;
        const key = asObject(value, where);
        return { key_id: asString(key.key_id, `${where}.key_id`), ascii_armor: asString(key.ascii_armor, `${where}.ascii_armor`) };
      }),
    },
    packages: optional(body.packages, 'packages', (value, where) =>
      Object.fromEntries(
        Object.entries(asObject(value, where)).map(([platform, entry]) => {
          const at = `${where}.${platform}`;
          const hashes = asObject(entry, at);
          return [
            platform,
            {
              hashes: asStringArray(hashes.hashes, `${at}.hashes`),
              package_size: optional(hashes.package_size, `${at}.package_size`, asNumber),
            },
          ];
        }),
      ),
    ),
  };
}

function parsePlatformObject(value: unknown, where: string): Platform {
  const platform: JsonObject = asObject(value, where);
  return { os: asString(platform.os, `${where}.os`), arch: asString(platform.arch, `${where}.arch`) };
}
