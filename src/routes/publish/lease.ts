import type { Actor } from '../../store/audit/actor';
import { describeActor } from '../../store/audit/actor';
import { withLease, type Lease } from '../../store/lease';
import type { BlobStore } from '../../store/store';

/**
 * The write lease from a Worker request: the same lease the CLI takes (one
 * writer per provider or module), owned by "the publish API" for as long as
 * the commit runs. A request waits up to 20 s for a lease someone else holds,
 * then answers 409 (LeaseBusyError) so the client can retry.
 */
export function withWorkerLease<T>(blobs: BlobStore, name: string, actor: Actor, purpose: string, fn: (lease: Lease) => Promise<T>): Promise<T> {
  return withLease(
    blobs,
    name,
    {
      owner: { host: 'edge-registry publish API', pid: 0, processStartedAt: new Date().toISOString(), purpose: `${purpose} by ${describeActor(actor)}` },
      maxWaitMs: 20_000,
    },
    fn,
  );
}
