import type { BlobStore, KvStore } from '../../../src/store/store';

/** An open store, local (./local.ts) or remote (./remote.ts), as ./open.ts returns it. */
export interface StoreHandle {
  kv: KvStore;
  blobs: BlobStore;
  /** Where the store is, for messages ("local state .wrangler/state/v3", "remote …"). */
  description: string;
  /** Releases the store (stops Miniflare); call once, also after errors. */
  close(): Promise<void>;
}
