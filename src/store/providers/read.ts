import type { EdgeCache } from '../edge-cache';
import type { ProviderAddress } from '../../protocol/address';
import type { Platform } from '../../protocol/platform';
import { downloadDocumentKey, versionsDocumentKey } from '../layout';
import { readDocument } from '../read-document';

// The Worker's reads of providers.v1 documents (see ../read-document.ts for the caching rules).

/** providers.v1 list-versions body. */
export const readVersionsDocument = (kv: KVNamespace, address: ProviderAddress, listTtlMs: number) =>
  readDocument(kv, versionsDocumentKey(address), false, listTtlMs);

/** providers.v1 find-a-package body for one platform (immutable once published). */
export const readDownloadDocument = (
  kv: KVNamespace,
  address: ProviderAddress,
  version: string,
  platform: Platform,
  listTtlMs: number,
  edgeCache: EdgeCache | null = null,
) => readDocument(kv, downloadDocumentKey(address, version, platform), true, listTtlMs, edgeCache);
