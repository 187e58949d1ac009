import {
  formatAddress, parsePlatform, platformName, type Platform, type ProviderAddress,
} from '../../../src/protocol/index';
import type { SigningKey } from '../../../src/store/types';
import { UpstreamError, type UpstreamHttp } from './upstream-http';

/**
 * The providers.v1 protocol as a client (Terraform's installer): service
 * discovery, list versions, find a package. Every answer is checked for the
 * fields used later; a missing or ill-typed field is an UpstreamError naming
 * the URL and the field.
 */

export interface UpstreamVersion {
  version: string;
  protocols: string[];
  platforms: Platform[];
}

export interface UpstreamPackage {
  /** URL of the download document itself. */
  documentUrl: string;
  protocols: string[];
  platform: Platform;
  filename: string;
  downloadUrl: string;
  shasumsUrl: string;
  shasumsSignatureUrl: string;
  shasum: string;
  signingKeys: SigningKey[];
}

/** Discovers the providers.v1 base URL of `hostname` (absolute, ends with "/"). 404 or no providers.v1 → UpstreamError. */
export async function discoverProviders(http: UpstreamHttp, hostname: string): Promise<string> {
  const url = `https://${hostname}/.well-known/terraform.json`;
  const { json, url: finalUrl } = await http.getJson(url, 'service discovery');
  const base = (json as Record<string, unknown> | null)?.['providers.v1'];
  if (typeof base !== 'string') {
    throw new UpstreamError(`service discovery ${finalUrl}: no "providers.v1" string; ${hostname} is not a provider registry`);
  }
  const resolved = new URL(base, finalUrl);
  if (!resolved.pathname.endsWith('/')) resolved.pathname += '/';
  return resolved.toString();
}

/** Lists the versions of a provider. A 404 becomes "not found on HOST". */
export async function listVersions(http: UpstreamHttp, base: string, address: ProviderAddress): Promise<UpstreamVersion[]> {
  const url = new URL(`${address.namespace}/${address.type}/versions`, base).toString();
  let json: unknown;
  try {
    ({ json } = await http.getJson(url, 'list versions'));
  } catch (error) {
    if (error instanceof UpstreamError && / HTTP 404/.test(error.message)) {
      throw new UpstreamError(`${formatAddress(address)} not found on ${address.hostname} (${url}: HTTP 404)`);
    }
    throw error;
  }
  const list = (json as { versions?: unknown } | null)?.versions;
  if (!Array.isArray(list)) throw new UpstreamError(`list versions ${url}: no "versions" array`);
  return list.map((entry, index) => {
    const e = entry as { version?: unknown; protocols?: unknown; platforms?: unknown };
    if (typeof e?.version !== 'string') throw new UpstreamError(`list versions ${url}: versions[${index}] has no "version" string`);
    const platforms = Array.isArray(e.platforms) ? e.platforms : [];
    return {
      version: e.version,
      protocols: stringArray(e.protocols),
      platforms: platforms.flatMap((p) => {
        const { os, arch } = (p ?? {}) as { os?: unknown; arch?: unknown };
        if (typeof os !== 'string' || typeof arch !== 'string') return [];
        try {
          return [parsePlatform(os, arch)];
        } catch {
          return [];
        }
      }),
    };
  });
}

/** Fetches and checks the download document of one version and platform. */
export async function findPackage(
  http: UpstreamHttp,
  base: string,
  address: ProviderAddress,
  version: string,
  platform: Platform,
): Promise<UpstreamPackage> {
  const url = new URL(`${address.namespace}/${address.type}/${version}/download/${platform.os}/${platform.arch}`, base).toString();
  const { json, url: finalUrl } = await http.getJson(url, `download document (${platformName(platform)})`);
  const doc = (json ?? {}) as Record<string, unknown>;
  const field = (name: string): string => {
    const value = doc[name];
    if (typeof value !== 'string' || value === '') throw new UpstreamError(`download document ${finalUrl}: "${name}" is missing or not a string`);
    return value;
  };
  const shasum = field('shasum').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(shasum)) throw new UpstreamError(`download document ${finalUrl}: "shasum" is not a hex SHA-256`);
  const filename = field('filename');
  if (!/^[A-Za-z0-9._+-]+$/.test(filename)) throw new UpstreamError(`download document ${finalUrl}: "filename" ${JSON.stringify(filename.slice(0, 80))} is not a plain file name`);
  const keys = ((doc.signing_keys as { gpg_public_keys?: unknown } | undefined)?.gpg_public_keys);
  if (!Array.isArray(keys) || keys.length === 0) throw new UpstreamError(`download document ${finalUrl}: no signing_keys.gpg_public_keys`);
  const signingKeys = keys.flatMap((k) => {
    const { key_id, ascii_armor } = (k ?? {}) as { key_id?: unknown; ascii_armor?: unknown };
    return typeof ascii_armor === 'string' ? [{ key_id: typeof key_id === 'string' ? key_id.toUpperCase() : '', ascii_armor }] : [];
  });
  const resolve = (name: string) => {
    try {
      return new URL(field(name), finalUrl).toString();
    } catch {
      throw new UpstreamError(`download document ${finalUrl}: "${name}" is not a URL`);
    }
  };
  if (doc.os !== platform.os || doc.arch !== platform.arch) {
    throw new UpstreamError(`download document ${finalUrl}: it is for ${String(doc.os)}_${String(doc.arch)}, not ${platformName(platform)}`);
  }
  return {
    documentUrl: finalUrl,
    protocols: stringArray(doc.protocols),
    platform,
    filename,
    downloadUrl: resolve('download_url'),
    shasumsUrl: resolve('shasums_url'),
    shasumsSignatureUrl: resolve('shasums_signature_url'),
    shasum,
    signingKeys,
  };
}

function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}
