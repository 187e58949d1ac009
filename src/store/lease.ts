import { LeaseBusyError, LeaseLostError } from './errors';
import { leaseObjectKey } from './layout';
import type { BlobStore } from './store';

/**
 * Exclusive writer leases: one writer per provider (or per module, per
 * mirrored provider — any name from src/store/layout.ts) at a time, on the
 * local state and on Cloudflare alike.
 *
 * A lease is one small R2 object (`.leases/NAME`) holding its owner (host,
 * pid, process start time, purpose) and an expiry. Every change to it is a
 * conditional write, which R2 makes atomic and strongly consistent:
 *   - take a free lease: create with `If-None-Match: *` (binding:
 *     `onlyIf: { etagDoesNotMatch: '*' }`) — of two creators exactly one wins;
 *   - renew, release (marks it released) and take over an expired or dead
 *     owner's lease: write with `If-Match: <etag read>` (`etagMatches`) — of two
 *     that read the same stale lease, exactly one replaces it.
 * Miniflare's local R2 evaluates `onlyIf` and writes inside one SQLite
 * transaction, and SQLite serialises those across the processes sharing the
 * state, so the local state gets the same guarantee. Cloudflare R2's S3 API
 * honours If-Match/If-None-Match on PutObject; an S3 emulator that ignores
 * them (s3rver) is detected right after the create (a second create of the
 * same bytes must fail) and reported, since the lease then excludes nobody.
 *
 * The holder renews the lease while it works, so a crashed holder blocks
 * others only until the expiry (default 30 s), or not at all when its owner
 * is known dead (`ownerIsGone`: same host, pid gone). A holder that fails to
 * renew (it was paused past the expiry and someone took over) learns it from
 * `check()`, which callers run before each write.
 */

/** Who holds a lease; shown to anyone waiting for it. */
export interface LeaseOwner {
  host: string;
  pid: number;
  /** When the owner process started (ISO 8601), to tell a reused pid apart. */
  processStartedAt: string;
  /** What the owner is doing, e.g. "publish-provider registry.example.com/acme/thing 1.2.0". */
  purpose: string;
}

/** The stored lease (JSON in the lease object). */
export interface LeaseState {
  name: string;
  owner: LeaseOwner;
  /** Random; tells two holders in one process apart. */
  token: string;
  acquiredAt: string;
  renewedAt: string;
  /** Epoch milliseconds after which anyone may take the lease over. */
  expiresAt: number;
  released: boolean;
}

export interface LeaseOptions {
  owner: LeaseOwner;
  /** How long a lease stays valid without renewal (default 30 s). */
  ttlMs?: number;
  /** How long to wait for a held lease before giving up with LeaseBusyError (default 15 min). */
  maxWaitMs?: number;
  /** Messages for the user: who holds the lease while waiting, takeovers, warnings. */
  log?: (line: string) => void;
  /**
   * True when the owner is known to be dead (same host, its pid is gone): its
   * lease is taken over at once instead of after the expiry.
   */
  ownerIsGone?: (owner: LeaseOwner) => boolean;
}

/** A held lease. */
export interface Lease {
  readonly name: string;
  /** Throws LeaseLostError when the lease was lost (renewal failed past the expiry, or it was taken over). */
  check(): void;
  /** Stops renewing and marks the lease released (best effort: an expired lease is free anyway). Idempotent. */
  release(): Promise<void>;
}

const DEFAULT_TTL_MS = 30_000;
const DEFAULT_MAX_WAIT_MS = 15 * 60_000;
const warnedStores = new WeakSet<object>();

/**
 * Takes the lease `name` in `blobs`, waiting while another live owner holds
 * it (saying who and since when, once, then every 30 s). An expired, released,
 * damaged or dead owner's lease is taken over (with a message unless released).
 * Throws LeaseBusyError after options.maxWaitMs; store errors propagate.
 */
export async function acquireLease(blobs: BlobStore, name: string, options: LeaseOptions): Promise<Lease> {
  const key = leaseObjectKey(name);
  const ttl = options.ttlMs ?? DEFAULT_TTL_MS;
  const log = options.log ?? (() => {});
  const deadline = Date.now() + (options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
  const token = randomToken();
  const acquiredAt = new Date().toISOString();
  const stateText = () => {
    const now = Date.now();
    const state: LeaseState = {
      name,
      owner: options.owner,
      token,
      acquiredAt,
      renewedAt: new Date(now).toISOString(),
      expiresAt: now + ttl,
      released: false,
    };
    return JSON.stringify(state);
  };
  let lastAnnounced = 0;

  for (;;) {
    const current = await blobs.get(key);
    if (!current) {
      const text = stateText();
      const created = await blobs.put(key, text, { onlyIf: { etagDoesNotMatch: '*' }, httpMetadata: { contentType: 'application/json' } });
      if (created) {
        const again = await blobs.put(key, text, { onlyIf: { etagDoesNotMatch: '*' }, httpMetadata: { contentType: 'application/json' } });
        if (again && !warnedStores.has(blobs)) {
          warnedStores.add(blobs);
          log(
            `warning: this object store ignores conditional writes (If-None-Match), so the lease ${name} cannot keep other writers out; Cloudflare R2 and the local state honour them`,
          );
        }
        return holdLease(blobs, key, name, again?.etag ?? created.etag, ttl, stateText, log);
      }
      continue; // someone created it between our read and write
    }
    const state = parseLeaseState(await current.text());
    const now = Date.now();
    // Our own create whose answer was lost (a retried write) is ours.
    if (state?.token === token && !state.released) return holdLease(blobs, key, name, current.etag, ttl, stateText, log);
    const why = !state
      ? 'its lease object is unreadable'
      : state.released
        ? ''
        : state.expiresAt <= now
          ? `expired ${Math.round((now - state.expiresAt) / 1000)} s ago`
          : options.ownerIsGone?.(state.owner)
            ? `process ${state.owner.pid} on ${state.owner.host} is gone`
            : null;
    if (why !== null) {
      const taken = await blobs.put(key, stateText(), { onlyIf: { etagMatches: current.etag }, httpMetadata: { contentType: 'application/json' } });
      if (!taken) continue; // another waiter took it first
      if (why) log(`took over the lease ${name}${state ? ` from ${describeOwner(state)}` : ''}: ${why}`);
      return holdLease(blobs, key, name, taken.etag, ttl, stateText, log);
    }
    if (now > deadline) {
      throw new LeaseBusyError(`${name} is being written by ${describeOwner(state!)}; gave up waiting — try again when it is done`);
    }
    if (now - lastAnnounced >= 30_000) {
      lastAnnounced = now;
      log(`waiting for ${describeOwner(state!)} to finish (lease ${name}, expires in ${Math.ceil((state!.expiresAt - now) / 1000)} s unless renewed)`);
    }
    await sleep(150 + Math.random() * 250);
  }
}

/**
 * Runs `fn` holding the lease `name` and releases it afterwards, also when
 * `fn` throws. `fn` should call `lease.check()` before each write.
 */
export async function withLease<T>(blobs: BlobStore, name: string, options: LeaseOptions, fn: (lease: Lease) => Promise<T>): Promise<T> {
  const lease = await acquireLease(blobs, name, options);
  try {
    return await fn(lease);
  } finally {
    await lease.release();
  }
}

/** Parses a stored lease; null when it is not one (damaged, truncated). */
export function parseLeaseState(text: string): LeaseState | null {
  try {
    const value = JSON.parse(text) as Partial<LeaseState>;
    if (typeof value !== 'object' || value === null) return null;
    if (typeof value.expiresAt !== 'number' || typeof value.token !== 'string' || typeof value.owner !== 'object' || value.owner === null) return null;
    return value as LeaseState;
  } catch {
    return null;
  }
}

/** "host H pid P (purpose) since T" */
export function describeOwner(state: LeaseState): string {
  const { host, pid, purpose } = state.owner;
  return `${purpose || 'a writer'} (host ${host}, pid ${pid}) since ${state.acquiredAt}`;
}

function holdLease(blobs: BlobStore, key: string, name: string, initialEtag: string, ttl: number, stateText: () => string, log: (line: string) => void): Lease {
  let etag = initialEtag;
  let expiresAt = Date.now() + ttl;
  let lost: string | null = null;
  let released = false;
  // Renewals and the release run one at a time, each with the etag the previous one produced.
  let queue: Promise<void> = Promise.resolve();
  const renew = () => {
    queue = queue.then(async () => {
      if (released || lost) return;
      const startedAt = Date.now();
      try {
        const written = await blobs.put(key, stateText(), { onlyIf: { etagMatches: etag }, httpMetadata: { contentType: 'application/json' } });
        if (!written) lost = 'another writer took it over';
        else {
          etag = written.etag;
          expiresAt = startedAt + ttl;
        }
      } catch (error) {
        if (Date.now() >= expiresAt) lost = `could not renew it: ${(error as Error).message}`;
      }
    });
  };
  const timer = setInterval(renew, Math.max(1000, Math.floor(ttl / 4)));
  (timer as { unref?: () => void }).unref?.();
  return {
    name,
    check() {
      if (!lost && Date.now() >= expiresAt) lost = 'it expired before it could be renewed';
      if (lost) throw new LeaseLostError(name, lost);
    },
    async release() {
      if (released) return;
      clearInterval(timer);
      await queue;
      released = true;
      if (lost) return;
      try {
        const state = { ...(JSON.parse(stateText()) as LeaseState), released: true, expiresAt: 0 };
        await blobs.put(key, JSON.stringify(state), { onlyIf: { etagMatches: etag }, httpMetadata: { contentType: 'application/json' } });
      } catch (error) {
        log(`warning: could not release the lease ${name} (${(error as Error).message}); it expires by itself`);
      }
    },
  };
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
