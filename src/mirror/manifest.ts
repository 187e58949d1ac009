import { formatAddress, type ProviderAddress } from '../protocol/address';
import { parseShasums } from '../protocol/hashes';
import { platformName, type Platform } from '../protocol/platform';
import { archiveFilename } from '../protocol/release-files';
import type { PullManifest } from '../store/mirror/pull';
import type { SigningKey } from '../store/types';
import { verifySumsSignature } from './signature';
import { findPackage, type JsonGetter } from './upstream';
import { UpstreamError, type UpstreamClient } from './upstream-http';

/**
 * Building the verified manifest of one upstream version, as Terraform's
 * installer checks a package before using it: each allowed platform's
 * download document → one SHA256SUMS for all of them → its detached
 * signature verifies with a key of `signing_keys` → every document's
 * `shasum` is its archive's line in that SHA256SUMS. Nothing from the upstream
 * is used (or stored) before these checks pass; any failure is an
 * UpstreamError naming the URL and the check.
 */
export async function buildManifest(
  http: UpstreamClient & JsonGetter,
  base: string,
  address: ProviderAddress,
  version: string,
  platforms: readonly Platform[],
): Promise<PullManifest> {
  const label = `${formatAddress(address)} ${version}`;
  if (platforms.length === 0) throw new UpstreamError(`${label}: the upstream offers no platform the pull-through policy allows`, 404);
  const documents = await Promise.all(platforms.map((platform) => findPackage(http, base, address, version, platform)));
  const first = documents[0]!;
  for (const doc of documents) {
    if (doc.shasumsUrl !== first.shasumsUrl || doc.shasumsSignatureUrl !== first.shasumsSignatureUrl) {
      throw new UpstreamError(`${label}: ${doc.documentUrl} names another SHA256SUMS (${doc.shasumsUrl}) than ${first.documentUrl} (${first.shasumsUrl})`);
    }
  }
  const [sums, signature] = await Promise.all([http.getFile(first.shasumsUrl, 'SHA256SUMS'), http.getFile(first.shasumsSignatureUrl, 'SHA256SUMS.sig')]);
  // Terraform trusts the keys of the document it verifies with; every document names the same signer in practice.
  const keys = new Map<string, SigningKey>();
  for (const doc of documents) for (const key of doc.signingKeys) keys.set(`${key.key_id}\n${key.ascii_armor}`, key);
  const signer = await verifySumsSignature(sums, signature, [...keys.values()], { signatureUrl: first.shasumsSignatureUrl, documentUrl: first.documentUrl });
  let lines;
  try {
    lines = parseShasums(new TextDecoder().decode(sums));
  } catch (error) {
    throw new UpstreamError(`SHA256SUMS check failed: ${first.shasumsUrl}: ${(error as Error).message}`);
  }
  const packages = documents.map((doc) => {
    const line = lines.find((entry) => entry.filename === doc.filename);
    if (!line) throw new UpstreamError(`SHA256SUMS check failed: ${first.shasumsUrl} has no line for ${doc.filename}`);
    if (line.sha256Hex !== doc.shasum) {
      throw new UpstreamError(
        `checksum check failed: ${doc.documentUrl} says shasum ${doc.shasum} for ${platformName(doc.platform)}, the signed SHA256SUMS says ${line.sha256Hex}`,
      );
    }
    return {
      os: doc.platform.os,
      arch: doc.platform.arch,
      filename: archiveFilename(address.type, version, doc.platform),
      upstreamFilename: doc.filename,
      shasum: doc.shasum,
      downloadUrl: doc.downloadUrl,
      documentUrl: doc.documentUrl,
    };
  });
  return {
    address,
    version,
    protocols: first.protocols,
    signer,
    shasumsUrl: first.shasumsUrl,
    sums: new TextDecoder().decode(sums),
    signature: btoa(Array.from(signature, (b) => String.fromCharCode(b)).join('')),
    packages,
    verifiedAt: new Date().toISOString(),
  };
}
