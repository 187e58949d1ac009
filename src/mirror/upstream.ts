import { formatAddress, type ProviderAddress } from '../protocol/address';
import { parseServiceDiscovery } from '../protocol/discovery';
import { WireShapeError } from '../protocol/errors';
import { parsePlatform, platformName, type Platform } from '../protocol/platform';
import { parseProviderPackageResponse, parseProviderVersionsResponse } from '../protocol/providers-v1';
import type { SigningKey } from '../store/types';
import { UpstreamError } from './upstream-http';

/**
 * The providers.v1 protocol as a client (what Terraform's installer asks an
 * origin registry), for the Worker's pull-through: service discovery, list
 * versions, find a package. Every answer is checked for the fields used
 * later; a missing or ill-typed field is an UpstreamError naming the URL and
 * the field. `http` is anything with getJson (the client of src/http/upstream-client.ts).
 */

export interface JsonGetter {
  getJson(url: string, what: string): Promise<{ json: unknown; url: string }>;
}

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
 * The providers.v1 base URL of `hostname` (absolute, ends with "/"): `override`
 * when the policy's `hosts` sets one, else https://HOST/.well-known/terraform.json.
 * Throws UpstreamError when discovery fails or names no providers.v1.
 */
export async function discoverProviders(http: JsonGetter, hostname: string, override?: string): Promise<string> {
  if (override !== undefined) return override;
  const url = `https://${hostname}/.well-known/terraform.json`;
  const { json, url: finalUrl } = await http.getJson(url, 'service discovery');
  const base = shaped(() => parseServiceDiscovery(json), 'service discovery', finalUrl)['providers.v1'];
  if (base === undefined) throw new UpstreamError(`service discovery ${finalUrl}: no "providers.v1"; ${hostname} is not a provider registry`);
  const resolved = new URL(base, finalUrl);
  if (!resolved.pathname.endsWith('/')) resolved.pathname += '/';
  return resolved.toString();
}

/** Lists the versions of a provider; a 404 becomes UpstreamError(404) "not found on HOST". */
export async function listVersions(http: JsonGetter, base: string, address: ProviderAddress): Promise<UpstreamVersion[]> {
  const url = new URL(`${address.namespace}/${address.type}/versions`, base).toString();
  let json: unknown;
  try {
    ({ json } = await http.getJson(url, 'list versions'));
  } catch (error) {
    if (error instanceof UpstreamError && error.httpStatus === 404) {
      throw new UpstreamError(`${formatAddress(address)} not found on ${address.hostname} (${url}: HTTP 404)`, 404);
    }
    throw error;
  }
  return shaped(() => parseProviderVersionsResponse(json), 'list versions', url).versions.map((entry) => ({
    version: entry.version,
    protocols: entry.protocols ?? [],
    platforms: (entry.platforms ?? []).flatMap(({ os, arch }) => {
      try {
        return [parsePlatform(os, arch)];
      } catch {
        return []; // a platform this client cannot name is never pulled
      }
    }),
  }));
}

/** Fetches and checks the download document of one version and platform. */
export async function findPackage(http: JsonGetter, base: string, address: ProviderAddress, version: string, platform: Platform): Promise<UpstreamPackage> {
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
  if (doc.os !== platform.os || doc.arch !== platform.arch) {
    throw new UpstreamError(`download document ${finalUrl}: it is for ${doc.os}_${doc.arch}, not ${platformName(platform)}`);
  }
  const resolve = (name: 'download_url' | 'shasums_url' | 'shasums_signature_url') => {
    try {
      return new URL(doc[name], finalUrl).toString();
    } catch {
      throw new UpstreamError(`download document ${finalUrl}: "${name}" is not a URL`);
    }
  };
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

function shaped<T>(parse: () => T, what: string, url: string): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof WireShapeError) throw new UpstreamError(`${what} ${url}: ${error.message}`);
    throw error;
  }
}
