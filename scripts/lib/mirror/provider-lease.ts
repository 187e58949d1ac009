import { formatAddress, type ProviderAddress } from '../../../src/protocol/index';
import { providerLeaseName } from '../../../src/store/layout';
import { withLease, type Lease } from '../../../src/store/lease';
import { rebuildProviderIndex } from '../../../src/store/providers/write';
import type { StoreHandle } from '../stores/handle';
import { processLeaseOptions } from '../stores/lease';

/**
 * How long a mirror run's provider lease stays valid without renewal: long
 * (5 min), because a busy machine moving large archives can stall renewals
 * past the 30 s default and lose the lease mid-run. A killed run on the same
 * host is taken over at once (its pid is gone), so only a dead run on another
 * host makes the next one wait this long.
 */
export const MIRROR_LEASE_TTL_MS = 5 * 60_000;

/**
 * The store step of `mirror sync` and `mirror import` for one provider: runs
 * `write` (which stores its verified versions with storeMirroredVersion)
 * under the provider's lease — the one publish-provider takes, so there is
 * one writer per provider — then rebuilds the provider's index and lists
 * while the lease is still held. A dry run writes nothing: `write` runs
 * without a lease and nothing is rebuilt. `command` ("mirror sync") names the
 * lease's purpose. Throws what the lease (LeaseBusyError, a lost lease), the
 * rebuild or `write` throws.
 */
export async function writeUnderProviderLease<T>(
  store: StoreHandle,
  address: ProviderAddress,
  run: { command: string; dryRun: boolean; log: (line: string) => void },
  write: (lease?: Lease) => Promise<T>,
): Promise<T> {
  if (run.dryRun) return write();
  return withLease(
    store.blobs,
    providerLeaseName(address),
    processLeaseOptions(`${run.command} ${formatAddress(address)}`, run.log, { ttlMs: MIRROR_LEASE_TTL_MS }),
    async (lease) => {
      const done = await write(lease);
      lease.check();
      await rebuildProviderIndex(
        store,
        address,
        () => {},
        () => lease.check(),
      );
      return done;
    },
  );
}
