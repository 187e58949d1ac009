import type { EdgeCache } from '../edge-cache';
import type { ProviderAddress } from '../../protocol/address';
import type { Platform } from '../../protocol/platform';
import { committedRecordKey, downloadDocumentKey, versionsDocumentKey } from '../layout';
import { readDocument, type FromRecord } from '../read-document';
import type { BlobStore } from '../store';
import { downloadDocument, mirrorVersionDocument } from './documents';
import { parseVersionRecord } from './version-records';

// The Worker's reads of providers.v1 documents (see ../read-document.ts for the caching rules).

/** providers.v1 list-versions body. */
export const readVersionsDocument = (kv: KVNamespace, address: ProviderAddress, listTtlMs: number) =>
  readDocument(kv, versionsDocumentKey(address), false, listTtlMs);

/**
 * A version's document built from its committed R2 record (one R2 read):
 * the download document of `platform`, or with no platform the mirror's
 * VERSION.json. Null when the version is not committed or lacks the platform.
 */
export function providerDocumentFromRecord(blobs: BlobStore, address: ProviderAddress, version: string, platform?: Platform): FromRecord {
  return async () => {
    const key = committedRecordKey(address, version);
    const object = await blobs.get(key);
    if (!object) return null;
    const record = parseVersionRecord(await object.text(), key);
    if (!platform) return mirrorVersionDocument(record);
    const pkg = record.packages.find((p) => p.os === platform.os && p.arch === platform.arch);
    return pkg ? downloadDocument(record, pkg) : null;
  };
}

/** providers.v1 find-a-package body for one platform (immutable once published; built from the R2 record on a KV miss). */
export const readDownloadDocument = (
  kv: KVNamespace,
  blobs: BlobStore,
  address: ProviderAddress,
  version: string,
  platform: Platform,
  listTtlMs: number,
  edgeCache: EdgeCache | null = null,
) =>
  readDocument(kv, downloadDocumentKey(address, version, platform), true, listTtlMs, {
    edgeCache,
    fromRecord: providerDocumentFromRecord(blobs, address, version, platform),
  });
