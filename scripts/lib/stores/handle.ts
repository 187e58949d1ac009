import type { Store } from '../../../src/store/store';

/** An open store, local (./local.ts) or remote (./remote.ts), as ./open.ts returns it. */
export interface StoreHandle extends Store {
  /** Where the store is, for messages ("local state .wrangler/state/v3", "remote …"). */
  description: string;
  /** Releases the store (stops Miniflare); call once, also after errors. */
  close(): Promise<void>;
  /**
   * The registry Worker serving this same local state (openLocalStore with `registry`): the local publish
   * goes through its publish API. `exclusive` runs `call` (one request to it, or several side by side) holding the local state's write lock.
   */
  registry?: { origin: string; hostname: string; exclusive<T>(call: () => Promise<T>): Promise<T> };
}
