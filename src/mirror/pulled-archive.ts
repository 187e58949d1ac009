import type { OpenedZip, ReadDigest } from './archive-checks';
import { UpstreamError } from './upstream-http';
import type { ArchiveSource } from './verify-archive';
import { verifiedCopy, type VerifiedCopyOptions } from './verified-copy';
import { zipDigest } from './zip-digest';

/**
 * Pull-through's archives as ArchiveSources (src/mirror/verify-archive.ts),
 * for src/routes/mirror-pull/archive.ts: one being copied from the upstream
 * to R2 and the client (StreamedArchive), or one R2 already holds from a pull
 * that stopped before its commit (storedArchive). Both open the R2 object by
 * range (./zip-digest.ts) and delete it when a zip check fails.
 */

/**
 * An upstream body copied to R2 and to the client at once (./verified-copy.ts:
 * streaming, in lockstep, the last block held back until `settle` passed).
 * The copy starts when this is made (the client's response needs its stream
 * now); read() must be called before the body ends, as verifyMirroredArchive
 * does at once. read() resolves once the bytes passed and `store` finished
 * putting them, before the client's last block, which waits for
 * `beforeClientEnd` (the commit).
 */
export class StreamedArchive implements ArchiveSource {
  /** The client's body: it errors when a check fails, and ends only after `beforeClientEnd`. */
  readonly client: ReadableStream<Uint8Array>;
  /** Resolves when both destinations got every verified byte; rejects with UpstreamError otherwise. */
  readonly done: Promise<void>;
  private readonly stored: Promise<void>;
  private readonly kept: Promise<ReadDigest>;
  private settle: ((digest: ReadDigest) => void) | null = null;

  constructor(
    private readonly bucket: R2Bucket,
    private readonly key: string,
    body: ReadableStream<Uint8Array>,
    options: Omit<VerifiedCopyOptions, 'settle'> & { store: (body: ReadableStream<Uint8Array>) => Promise<void> },
  ) {
    const copy = verifiedCopy(body, {
      ...options,
      settle: (digest) => {
        if (!this.settle) throw new UpstreamError(`${options.what}: read before it was verified`);
        this.settle(digest);
      },
    });
    this.client = copy.client;
    this.done = copy.done;
    this.kept = copy.kept;
    this.stored = options.store(copy.store);
    this.stored.catch(() => {}); // a failed put fails the copy too (its stream errors), which read() and `done` report
  }

  async read(settle: (digest: ReadDigest) => void): Promise<ReadDigest> {
    this.settle = settle;
    const [digest] = await Promise.all([this.kept, this.stored]);
    return digest;
  }

  open(): Promise<OpenedZip> {
    return openStored(this.bucket, this.key);
  }

  discard(): Promise<string> {
    return discardStored(this.bucket, this.key);
  }
}

/**
 * An archive a pull stored under `key` but never committed. Its bytes were
 * verified while they were stored: the put carries the verified SHA-256 as
 * customMetadata.sha256 and completes only when the copy's checks passed, so
 * read() takes the digest from the object's head. Throws when it is gone.
 */
export function storedArchive(bucket: R2Bucket, key: string): ArchiveSource {
  return {
    async read(settle) {
      const head = await bucket.head(key);
      if (!head) throw new Error(`${key} vanished before it was committed`);
      const digest = { sha256Hex: head.customMetadata?.sha256 ?? '', size: head.size };
      settle(digest);
      return digest;
    },
    open: () => openStored(bucket, key),
    discard: () => discardStored(bucket, key),
  };
}

/** The stored object's entry names and h1, read by range; throws when it is gone or zipDigest's UpstreamError when it is not an accepted zip. */
async function openStored(bucket: R2Bucket, key: string): Promise<OpenedZip> {
  const head = await bucket.head(key);
  if (!head) throw new Error(`${key} vanished before it was committed`);
  const digest = await zipDigest(bucket, key, head.size);
  return { entries: digest.names.map((name) => ({ name })), h1: digest.h1, sha256Hex: null };
}

/** Terraform would refuse an archive that failed a zip check: it is deleted again, and the error says so. */
async function discardStored(bucket: R2Bucket, key: string): Promise<string> {
  await bucket.delete(key);
  return 'deleted it again';
}
