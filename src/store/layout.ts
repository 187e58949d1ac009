import type { ProviderAddress } from '../protocol/address';
import type { Platform } from '../protocol/platform';

/**
 * The storage layout. This file alone knows KV key names and R2 object names;
 * the Worker and the scripts both derive every key through it.
 *
 * KV (values that are already response bodies are served byte for byte):
 *   v1/providers/HOST/NS/TYPE/versions                  registry "list versions" body
 *   v1/providers/HOST/NS/TYPE/VERSION/download/OS_ARCH  registry "find a package" body (immutable)
 *   v1/mirror/HOST/NS/TYPE/index.json                   mirror "list versions" body
 *   v1/mirror/HOST/NS/TYPE/VERSION.json                 mirror "list packages" body (immutable)
 *   records/HOST/NS/TYPE/VERSION                        version record (JSON): the source of truth the bodies derive from
 *   signing-keys/HOST/NS                                namespace public keys (JSON)
 *   tokens/SHA256                                       read-token record, by the SHA-256 of the token
 *
 * R2:
 *   HOST/NS/TYPE/VERSION/FILENAME                       archives, SHA256SUMS, SHA256SUMS.sig
 *
 * All names are lower case; HOST may carry a :port.
 */

function providerPath({ hostname, namespace, type }: ProviderAddress): string {
  return `${hostname}/${namespace}/${type}`;
}

export const versionsDocumentKey = (address: ProviderAddress) => `v1/providers/${providerPath(address)}/versions`;

export const downloadDocumentKey = (address: ProviderAddress, version: string, platform: Platform) =>
  `v1/providers/${providerPath(address)}/${version}/download/${platform.os}_${platform.arch}`;

export const mirrorIndexKey = (address: ProviderAddress) => `v1/mirror/${providerPath(address)}/index.json`;

/** Prefix of every mirror index key (all hostnames), and the address a key names (null for any other key). */
export const mirrorIndexPrefix = 'v1/mirror/';
export function parseMirrorIndexKey(key: string): ProviderAddress | null {
  const match = /^v1\/mirror\/([^/]+)\/([^/]+)\/([^/]+)\/index\.json$/.exec(key);
  return match ? { hostname: match[1]!, namespace: match[2]!, type: match[3]! } : null;
}

export const mirrorVersionKey = (address: ProviderAddress, version: string) =>
  `v1/mirror/${providerPath(address)}/${version}.json`;

export const versionRecordPrefix = (address: ProviderAddress) => `records/${providerPath(address)}/`;

export const versionRecordKey = (address: ProviderAddress, version: string) =>
  `${versionRecordPrefix(address)}${version}`;

/** Prefix of every version record in a namespace (all its providers), for listing which keys signed what. */
export const namespaceRecordPrefix = (hostname: string, namespace: string) => `records/${hostname}/${namespace}/`;

export const signingKeysKey = (hostname: string, namespace: string) => `signing-keys/${hostname}/${namespace}`;

export const tokenKey = (tokenSha256Hex: string) => `tokens/${tokenSha256Hex}`;
export const tokenPrefix = 'tokens/';

/** R2 object name of a release file (archive, SHA256SUMS or its signature). */
export const releaseObjectKey = (address: ProviderAddress, version: string, filename: string) =>
  `${providerPath(address)}/${version}/${filename}`;

/**
 * URL path at which the Worker serves a release file. Path-absolute, so the
 * client resolves it against whichever host answered the metadata request.
 */
export const releaseFilePath = (address: ProviderAddress, version: string, filename: string) =>
  `/v1/archives/${providerPath(address)}/${version}/${filename}`;

// Release file names are protocol, defined in src/protocol/release-files.ts; re-exported for existing importers.
export { archiveFilename, shasumsFilename, shasumsSignatureFilename } from '../protocol/release-files';
