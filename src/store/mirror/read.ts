import type { EdgeCache } from '../edge-cache';
import type { ProviderAddress } from '../../protocol/address';
import { mirrorIndexKey, mirrorVersionKey } from '../layout';
import { readDocument } from '../read-document';
import { providerDocumentFromRecord } from '../providers/read';
import type { BlobStore } from '../store';

// The Worker's reads of the provider network mirror protocol's documents (see ../read-document.ts).

/** Mirror index.json body. */
export const readMirrorIndex = (kv: KVNamespace, address: ProviderAddress, listTtlMs: number) => readDocument(kv, mirrorIndexKey(address), false, listTtlMs);

/**
 * Mirror VERSION.json body: immutable once published for our own providers
 * (isolate until evicted, edge cache); `immutable: false` for a mirrored
 * upstream version, which may gain platforms: cached for `listTtlMs` like a
 * list, never in the edge cache. Given `blobs`, a KV miss is answered from
 * the version's committed R2 record (../read-document.ts); pull-through
 * passes null (it reads the record itself).
 */
export const readMirrorVersion = (
  kv: KVNamespace,
  blobs: BlobStore | null,
  address: ProviderAddress,
  version: string,
  listTtlMs: number,
  edgeCache: EdgeCache | null = null,
  immutable = true,
) =>
  readDocument(kv, mirrorVersionKey(address, version), immutable, listTtlMs, {
    edgeCache,
    ...(blobs ? { fromRecord: providerDocumentFromRecord(blobs, address, version) } : {}),
  });
