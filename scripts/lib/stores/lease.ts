import { hostname } from 'node:os';
import type { LeaseOptions, LeaseOwner } from '../../../src/store/lease';
import { processExists } from '../process-exists';

/**
 * Lease options for a script process: the owner is this host, pid and
 * process start time; a lease whose owner ran on this host and whose pid is
 * gone (a killed publish) is taken over at once rather than after its expiry.
 * Use: `withLease(store.blobs, providerLeaseName(address), processLeaseOptions('publish-provider …', say), async (lease) => …)`.
 */
export function processLeaseOptions(purpose: string, log?: (line: string) => void, overrides: Partial<LeaseOptions> = {}): LeaseOptions {
  return { owner: processOwner(purpose), ownerIsGone, ...(log ? { log } : {}), ...overrides };
}

/** This process as a lease owner. */
export function processOwner(purpose: string): LeaseOwner {
  return {
    host: hostname(),
    pid: process.pid,
    processStartedAt: new Date(Math.round(Date.now() - process.uptime() * 1000)).toISOString(),
    purpose,
  };
}

/** True when `owner` ran on this host and its process no longer exists. */
export function ownerIsGone(owner: LeaseOwner): boolean {
  if (owner.host !== hostname() || !Number.isInteger(owner.pid) || owner.pid <= 0) return false;
  if (owner.pid === process.pid) return false;
  return !processExists(owner.pid);
}
