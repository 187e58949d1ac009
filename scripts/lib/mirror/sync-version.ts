import { sha256Hex, type Platform, type ProviderAddress } from '../../../src/protocol/index';
import { shasumsFilename, shasumsSignatureFilename } from '../../../src/protocol/release-files';
import { releaseObjectKey } from '../../../src/store/layout';
import type { StoreHandle } from '../stores/handle';
import type { UpstreamHttp } from './upstream-http';
import type { Lease } from '../../../src/store/lease';
import { storeMirroredVersion } from '../../../src/store/mirror/write';
import type { VersionsDocumentRoom } from '../../../src/store/value-limits';
import type { ReleaseFile } from '../../../src/store/providers/write';
import type { PackageRecord, SigningKey, VersionRecord } from '../../../src/store/types';
import { type Limiter } from '../../../src/concurrency';
import { diskFile, memoryFile } from '../stores/release-files';
import { CRASH_ENV } from '../progress';
import { type UpstreamPackage } from '../../../src/mirror/upstream';
import { verifySumsSignature } from '../../../src/mirror/signature';

/**
 * The steps of one version's `mirror sync` (sync.ts runs them): its upstream SHA256SUMS and signature fetched and
 * verified (fetchSums), then the version record and its verified files stored (storeVerified).
 */

/** What a `mirror sync` run works with: the store, the upstream client, and how to report. */
export interface MirrorRunOptions {
  store: StoreHandle;
  /** This registry's own hostname: refused as a source. */
  ownHostname: string;
  /** providers.v1 overrides from the CLI configuration's `host` blocks. */
  providersServiceFor?: (host: string) => string | undefined;
  http: UpstreamHttp;
  dryRun?: boolean;
  /** Archives downloaded at once (default 4). */
  concurrency?: number;
  log?: (line: string) => void;
}

/** One version to sync: where it is listed upstream, which platforms were asked for, and the run's tools. */
export interface VersionSync {
  address: ProviderAddress;
  base: string;
  listed: { version: string; platforms: Platform[] };
  requested: readonly Platform[];
  options: MirrorRunOptions;
  work: string;
  limit: Limiter;
  log: (line: string) => void;
  lease?: Lease;
  /** The provider's versions-document room, one for the whole sync (its new versions count together; 1 KV read). */
  room?: VersionsDocumentRoom;
}

/** A version's upstream SHA256SUMS, its signature and the key that verified it; `first` is the document naming them. */
export interface VersionSums {
  first: UpstreamPackage;
  sums: Uint8Array;
  signature: Uint8Array;
  signer: SigningKey;
}

/**
 * The version's SHA256SUMS and signature, one for every platform's document:
 * downloaded, the signature verified with a key of `signing_keys`, and the
 * SHA256SUMS unchanged from the one mirrored with the version. Returns them,
 * or `failed` with the reason the version fails (documents naming another
 * SHA256SUMS, a download or the signature check failing, UPSTREAM CHANGED).
 * Throws only what the store throws.
 */
export async function fetchSums(
  sync: VersionSync,
  existing: VersionRecord | null,
  missing: readonly UpstreamPackage[],
): Promise<VersionSums | { failed: string }> {
  const { address, options } = sync;
  const { version } = sync.listed;
  // SHA256SUMS and its signature: one per version (every platform's document must name the same).
  const first = missing[0]!;
  for (const doc of missing) {
    if (doc.shasumsUrl !== first.shasumsUrl || doc.shasumsSignatureUrl !== first.shasumsSignatureUrl) {
      return { failed: `${doc.documentUrl} names another SHA256SUMS (${doc.shasumsUrl}) than ${first.documentUrl} (${first.shasumsUrl})` };
    }
  }
  let sums: Uint8Array;
  let signature: Uint8Array;
  let signer: SigningKey;
  try {
    [sums, signature] = await Promise.all([
      options.http.getFile(first.shasumsUrl, 'SHA256SUMS'),
      options.http.getFile(first.shasumsSignatureUrl, 'SHA256SUMS.sig'),
    ]);
    signer = await verifySumsSignature(sums, signature, first.signingKeys, { signatureUrl: first.shasumsSignatureUrl, documentUrl: first.documentUrl });
  } catch (error) {
    return { failed: (error as Error).message };
  }
  if (existing) {
    const storedSums = await options.store.blobs.head(releaseObjectKey(address, version, existing.shasumsFilename));
    if (storedSums?.customMetadata?.sha256 && storedSums.customMetadata.sha256 !== sha256Hex(sums)) {
      return { failed: `UPSTREAM CHANGED: ${first.shasumsUrl} differs from the SHA256SUMS mirrored with ${version}; mirrored files never change — kept ours` };
    }
  }
  return { first, sums, signature, signer };
}

/** The version record (the held one extended by the verified packages) and its files, stored with storeMirroredVersion. */
export async function storeVerified(
  sync: VersionSync,
  v: {
    label: string;
    existing: VersionRecord | null;
    first: UpstreamPackage;
    signer: SigningKey;
    sums: Uint8Array;
    signature: Uint8Array;
    verified: { pkg: PackageRecord; path: string }[];
  },
): Promise<void> {
  const { address, options, log } = sync;
  const { version } = sync.listed;
  const { label, existing, first, verified } = v;
  const protocols = existing?.protocols ?? (first.protocols.length ? first.protocols : ['5.0']);
  const record: VersionRecord = {
    address,
    version,
    protocols,
    packages: [...(existing?.packages ?? []), ...verified.map((x) => x.pkg)],
    shasumsFilename: existing?.shasumsFilename ?? shasumsFilename(address.type, version),
    shasumsSignatureFilename: existing?.shasumsSignatureFilename ?? shasumsSignatureFilename(address.type, version),
    signingKey: existing?.signingKey ?? v.signer,
    publishedAt: existing?.publishedAt ?? new Date().toISOString(),
  };
  const files: ReleaseFile[] = [
    ...verified.map(({ pkg, path }) => diskFile(pkg.filename, path, { sha256Hex: pkg.shasum, size: pkg.size }, 'application/zip')),
    memoryFile(record.shasumsFilename, v.sums, 'text/plain; charset=utf-8'),
    memoryFile(record.shasumsSignatureFilename, v.signature, 'application/pgp-signature'),
  ];
  await storeMirroredVersion(
    options.store,
    record,
    files,
    (event) => {
      if (process.env[CRASH_ENV] === event.step) {
        log(`${CRASH_ENV}=${event.step}: exiting before "${event.step}" of ${label} (test hook)`);
        process.exit(70);
      }
      if (event.step === 'upload') log(`  ${label}: storing ${event.detail}`);
      if (event.step === 'skip-upload') log(`  ${label}: already stored: ${event.detail}`);
    },
    sync.lease,
    sync.room,
  );
}
