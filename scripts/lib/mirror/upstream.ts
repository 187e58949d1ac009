import {
  formatAddress, parsePlatform, parseProviderPackageResponse, parseProviderVersionsResponse, parseServiceDiscovery,
  platformName, WireShapeError, type Platform, type ProviderAddress,
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

/**
 * Discovers the providers.v1 base URL of `hostname` (absolute, ends with "/"),
 * or takes `override` (a CLI configuration `host` block) without asking.
 * 404 or no providers.v1 → UpstreamError.
 */
export async function discoverProviders(http: UpstreamHttp, hostname: string, override?: string): Promise<string> {
  if (override !== undefined) {
    try {
      const url = new URL(override);
      if (!url.pathname.endsWith('/')) url.pathname += '/';
      return url.toString();
    } catch {
      throw new UpstreamError(`host "${hostname}" in the Terraform CLI configuration: "providers.v1" = ${JSON.stringify(override)} is not an absolute URL`);
    }
  }
  const url = `https://${hostname}/.well-known/terraform.json`;
  const { json, url: finalUrl } = await http.getJson(url, 'service discovery');
  const base = shaped(() => parseServiceDiscovery(json), 'service discovery', finalUrl)['providers.v1'];
  if (base === undefined) {
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
  return shaped(() => parseProviderVersionsResponse(json), 'list versions', url).versions.map((entry) => ({
    version: entry.version,
    protocols: entry.protocols ?? [],
    // Platforms this client cannot name are left out (never mirrored).
    platforms: (entry.platforms ?? []).flatMap(({ os, arch }) => {
      try {
        return [parsePlatform(os, arch)];
      } catch {
        return [];
      }
    }),
  }));
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
  const doc = shaped(() => parseProviderPackageResponse(json), 'download document', finalUrl);
  const shasum = doc.shasum.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(shasum)) throw new UpstreamError(`download document ${finalUrl}: "shasum" is not a hex SHA-256`);
  if (!/^[A-Za-z0-9._+-]+$/.test(doc.filename)) {
    throw new UpstreamError(`download document ${finalUrl}: "filename" ${JSON.stringify(doc.filename.slice(0, 80))} is not a plain file name`);
  }
  const signingKeys = doc.signing_keys.gpg_public_keys.map((k) => ({ key_id: k.key_id.toUpperCase(), ascii_armor: k.ascii_armor }));
  if (signingKeys.length === 0) throw new UpstreamError(`download document ${finalUrl}: no signing_keys.gpg_public_keys`);
  const resolve = (name: 'download_url' | 'shasums_url' | 'shasums_signature_url') => {
    try {
      return new URL(doc[name], finalUrl).toString();
    } catch {
      throw new UpstreamError(`download document ${finalUrl}: "${name}" is not a URL`);
    }
  };
  if (doc.os !== platform.os || doc.arch !== platform.arch) {
    throw new UpstreamError(`download document ${finalUrl}: it is for ${doc.os}_${doc.arch}, not ${platformName(platform)}`);
  }
  return {
    documentUrl: finalUrl,
    protocols: doc.protocols,
    platform,
    filename: doc.filename,
    downloadUrl: resolve('download_url'),
    shasumsUrl: resolve('shasums_url'),
    shasumsSignatureUrl: resolve('shasums_signature_url'),
    shasum,
    signingKeys,
  };
}

/** Runs a wire-shape parser; a WireShapeError becomes an UpstreamError naming the URL. */
function shaped<T>(parse: () => T, what: string, url: string): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof WireShapeError) throw new UpstreamError(`${what} ${url}: ${error.message}`);
    throw error;
  }
}
