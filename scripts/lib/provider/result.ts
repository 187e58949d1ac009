import type { PackageRecord } from '../../../src/store/types';

/** One platform in the `--json` output: the stored package record, field for field. */
export type PublishedPlatform = PackageRecord;

/** What `--json` prints. */
export interface PublishResult {
  /** hostname/namespace/type */
  address: string;
  version: string;
  protocols: string[];
  platforms: PublishedPlatform[];
  key_id: string;
  /**
   * published: written now; unchanged: already published with these bytes and
   * verified whole; repaired: already published, missing or damaged parts
   * rewritten; dry-run: nothing written.
   */
  status: 'published' | 'unchanged' | 'repaired' | 'dry-run';
}
