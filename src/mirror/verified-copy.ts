import { bytesToHex } from '@noble/hashes/utils.js';
import { UpstreamError } from './upstream-http';
import { concatBytes } from '../bytes';
import type { ReadDigest } from './archive-checks';

/**
 * Copying an upstream archive to R2 and to the client at once, verified on
 * the way: the bytes are hashed as they pass (crypto.DigestStream, native)
 * and the LAST chunk is held back until the whole body's SHA-256 and size
 * passed `settle` (the bytes checks of src/mirror/verify-archive.ts: the
 * size announced, the verified SHA256SUMS line; run through
 * src/mirror/pulled-archive.ts). So a body that fails the checks never
 * reaches its end anywhere: R2's put sees an error instead of the end of its
 * stream (nothing stored) and the client's response is aborted rather than
 * completed. The client's last block also waits for `beforeClientEnd` (the
 * commit), so a client holding a complete download can rely on the mirror
 * holding it. The two destinations advance in lockstep (the pace of the slower
 * one), so the isolate never buffers more than a chunk or two whatever the
 * archive's size; a client that goes away stops only its own branch.
 */

export interface VerifiedCopyOptions {
  /**
   * Runs once every byte passed, with their SHA-256 and count, before the
   * last block goes anywhere; what it throws fails the copy (an UpstreamError
   * as it is, anything else as an UpstreamError naming `what`).
   */
  settle: (digest: ReadDigest) => void;
  /**
   * Exact size (Content-Length); the copy fails if the body differs. Null when
   * the upstream sent none: then both streams have no length (the store side
   * goes to a multipart upload, src/store/mirror/pull-parts.ts), the client's
   * download is chunked, and the body may be at most MAX_UNSIZED_BYTES.
   */
  size: number | null;
  /** Time allowed between two chunks from upstream (ms). */
  idleMs: number;
  /** Names the archive in error messages. */
  what: string;
  /**
   * Runs once every byte verified and the store's stream is complete (after
   * `kept` resolved), before
   * the client gets its last block: commit what was stored here. If it
   * throws, the client's download is aborted too.
   */
  beforeClientEnd?: () => Promise<void>;
}

export interface VerifiedCopy {
  /** The client's body (errors when verification fails). */
  client: ReadableStream<Uint8Array>;
  /** The R2 put's body, with its known length (R2 needs one), or without one when `size` is null. */
  store: ReadableStream<Uint8Array>;
  /** Resolves with the digest once every byte passed `settle` and the store's stream is complete; rejects as `done` does otherwise. */
  kept: Promise<ReadDigest>;
  /** Resolves when every byte verified and was handed to both; rejects with UpstreamError otherwise. */
  done: Promise<void>;
}

/** Starts copying `source`; see the file comment. */
export function verifiedCopy(source: ReadableStream<Uint8Array>, options: VerifiedCopyOptions): VerifiedCopy {
  // Both with the known length: R2 needs it, and the client gets a Content-Length, so a download cut short
  // by a failed check is visibly incomplete to any HTTP client, whatever proxy stands in between.
  const client = options.size === null ? new IdentityTransformStream() : new FixedLengthStream(options.size);
  const store = options.size === null ? new IdentityTransformStream() : new FixedLengthStream(options.size);
  let keep!: (digest: ReadDigest) => void;
  const kept = new Promise<ReadDigest>((resolve) => {
    keep = resolve;
  });
  const done = pump(
    source,
    client.writable.getWriter() as WritableStreamDefaultWriter<Uint8Array>,
    store.writable.getWriter() as WritableStreamDefaultWriter<Uint8Array>,
    options,
    keep,
  );
  // Rejects with `done` when the copy fails before the store's stream completed (handled here: a caller may use only `done`).
  const keptOrFailed = Promise.race([kept, done.then(() => kept)]);
  keptOrFailed.catch(() => {});
  return {
    client: client.readable as ReadableStream<Uint8Array>,
    store: store.readable as ReadableStream<Uint8Array>,
    kept: keptOrFailed,
    done,
  };
}

/**
 * Runs the copy: every byte read, hashed and forwarded but the last block
 * (LockstepCopy.readAll), `settle` on the digest, the last block to the
 * store and its end, `keep`, `beforeClientEnd`, the last block to the client.
 * Any failure cancels the upstream, aborts both destinations and rejects
 * with an UpstreamError.
 */
async function pump(
  source: ReadableStream<Uint8Array>,
  clientWriter: WritableStreamDefaultWriter<Uint8Array>,
  storeWriter: WritableStreamDefaultWriter<Uint8Array>,
  options: VerifiedCopyOptions,
  keep: (digest: ReadDigest) => void,
): Promise<void> {
  const reader = source.getReader();
  const copy = new LockstepCopy(clientWriter, storeWriter);
  const idle = idleWatch(options.idleMs, options.what);
  try {
    const read = await copy.readAll(reader, idle, options);
    options.settle(read);
    await copy.endStore();
    keep(read);
    await options.beforeClientEnd?.();
    await copy.endClient();
  } catch (error) {
    const reason = error instanceof UpstreamError ? error : new UpstreamError(`${options.what}: ${(error as Error).message}`);
    await Promise.allSettled([reader.cancel(reason), storeWriter.abort(reason), clientWriter.abort(reason), copy.abort(reason)]);
    throw reason;
  } finally {
    idle.stop();
  }
}

/**
 * The two destinations fed in lockstep with the digest beside them: chunks
 * are gathered into blocks of BLOCK_BYTES, each block goes to the digest and
 * both destinations at once (three native streams), and the LAST block is
 * held back until the caller ends each destination; so the isolate holds at
 * most two blocks. (Sent to sockets, as R2's put and the client's response
 * are, 64 KiB and 1 MiB blocks cost the same: bench/README.md.) A client
 * that goes away stops only its own branch.
 */
class LockstepCopy {
  private readonly digest = new crypto.DigestStream('SHA-256');
  private readonly digestWriter: WritableStreamDefaultWriter<ArrayBuffer | ArrayBufferView>;
  private clientAlive = true;
  private held: Uint8Array | null = null;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly client: WritableStreamDefaultWriter<Uint8Array>,
    private readonly store: WritableStreamDefaultWriter<Uint8Array>,
  ) {
    this.digest.digest.catch(() => {}); // rejects when the copy is aborted, which `done` reports
    this.digestWriter = this.digest.getWriter();
  }

  /**
   * Reads `reader` to its end, forwarding every block but the last; returns
   * the SHA-256 and count of all bytes. Throws UpstreamError for more bytes
   * than `size` announced (or MAX_UNSIZED_BYTES without one), or when a read
   * waits longer than `idle` allows.
   */
  async readAll(
    reader: ReadableStreamDefaultReader<Uint8Array>,
    idle: ReturnType<typeof idleWatch>,
    options: Pick<VerifiedCopyOptions, 'size' | 'what'>,
  ): Promise<ReadDigest> {
    let total = 0;
    for (;;) {
      idle.waiting(true);
      const { done, value } = await Promise.race([reader.read(), idle.expired]);
      idle.waiting(false);
      if (done) break;
      if (value.byteLength === 0) continue;
      total += value.byteLength;
      if (total > (options.size ?? MAX_UNSIZED_BYTES)) {
        throw new UpstreamError(
          options.size === null
            ? `${options.what} sent no Content-Length and more than ${MAX_UNSIZED_BYTES} bytes; refused`
            : `checksum check failed: ${options.what} sent more than the ${options.size} bytes it announced`,
        );
      }
      this.pending.push(value);
      this.pendingBytes += value.byteLength;
      if (this.pendingBytes >= BLOCK_BYTES) await this.next(this.takeBlock());
    }
    if (this.pendingBytes > 0) await this.next(this.takeBlock());
    await this.digestWriter.close();
    return { sha256Hex: bytesToHex(new Uint8Array(await this.digest.digest)), size: total };
  }

  /** The held last block to the store, then its end (R2's put completes). */
  async endStore(): Promise<void> {
    const held = this.held;
    if (held) await this.store.ready.then(() => this.store.write(held));
    await this.store.close();
  }

  /** The held last block to the client, then its end, unless the client went away. */
  async endClient(): Promise<void> {
    const held = this.held;
    if (this.clientAlive && held) await this.toClient(held);
    if (this.clientAlive) await this.client.close().catch(() => {});
  }

  abort(reason: unknown): Promise<void> {
    return this.digestWriter.abort(reason);
  }

  /** Hashes `block` while the block held before it goes to both destinations; then holds `block`. */
  private async next(block: Uint8Array): Promise<void> {
    const hashed = this.digestWriter.write(block);
    if (this.held) await this.forward(this.held);
    await hashed;
    this.held = block;
  }

  private async forward(block: Uint8Array): Promise<void> {
    const writes = [this.store.ready.then(() => this.store.write(block))];
    if (this.clientAlive) writes.push(this.toClient(block));
    await Promise.all(writes);
  }

  private toClient(block: Uint8Array): Promise<void> {
    return this.client.ready
      .then(() => this.client.write(block))
      .catch(() => {
        this.clientAlive = false;
      });
  }

  private takeBlock(): Uint8Array {
    const block = this.pending.length === 1 ? this.pending[0]! : concatBytes(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    return block;
  }
}

const BLOCK_BYTES = 1024 * 1024;
/** Largest archive accepted from an upstream that sends no Content-Length. */
const MAX_UNSIZED_BYTES = 1024 * 1024 * 1024;

/**
 * One timer for the whole copy (a timer armed and cleared per chunk cost more than hashing the chunk):
 * `expired` rejects with a 504 UpstreamError once a read of the upstream has waited `ms` without a chunk.
 * Only reads count: time spent while the destinations take a block (a slow client) does not.
 */
function idleWatch(ms: number, what: string): { expired: Promise<never>; waiting(on: boolean): void; stop(): void } {
  let since = Date.now();
  let reading = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    const check = () => {
      const quiet = reading ? Date.now() - since : 0;
      if (quiet >= ms) reject(new UpstreamError(`${what}: no data for ${ms / 1000} s`, 504));
      else timer = setTimeout(check, ms - quiet);
    };
    timer = setTimeout(check, ms);
  });
  expired.catch(() => {});
  return {
    expired,
    waiting(on) {
      reading = on;
      if (on) since = Date.now();
    },
    stop: () => clearTimeout(timer),
  };
}
