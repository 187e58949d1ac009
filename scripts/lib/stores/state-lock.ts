import { linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { processExists } from '../process-exists';

/**
 * A cross-process lock around each single write to the local state. The
 * state's SQLite files are opened by every process's own workerd, which
 * fails (rather than waits) when two write at once; taking turns per write
 * keeps concurrent publishes working (one process's own writes queue for
 * their turns in order, not by polling). (Exclusion of whole publishes is the
 * provider lease's job, src/store/lease.ts; this only spaces out writes.)
 *
 * The lock file is written complete under a temporary name and then linked
 * into place, which is atomic and fails when the lock exists, so no reader
 * ever sees an empty or partial owner. A lock is stale when its owner's pid
 * on this host is gone, when it is older than STALE_LOCK_MS (no single write
 * takes that long), or when it is unreadable and older than 2 s (an empty
 * file left by an older version). A stale lock is renamed away — atomic, so
 * of two processes judging it stale only one removes it — and the remover
 * checks it removed exactly the lock it judged, putting back one it did not.
 */
const STALE_LOCK_MS = 60_000;

export class StateLock {
  /** Settles when the last `run` of this instance so far has released the lock: the next one waits for it. */
  private queue: Promise<void> = Promise.resolve();

  /** `path`: the lock file (beside the state it guards). */
  constructor(private readonly path: string) {}

  /**
   * Runs `fn` holding the lock; throws (naming the owner and the file to remove) when it stays taken for 120 s.
   * Calls of one instance (one process's writes) take their turns in the order they were made, each starting as
   * soon as the one before it released the lock (rather than polling for it); other processes take theirs between.
   */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.queue;
    let done = () => {};
    this.queue = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      await before;
      const token = await this.acquire();
      try {
        return await fn();
      } finally {
        // Remove only our own lock (a stale-lock taker may have replaced it).
        if (this.read()?.token === token) rmSync(this.path, { force: true });
      }
    } finally {
      done();
    }
  }

  private async acquire(): Promise<string> {
    const deadline = Date.now() + 120_000;
    const token = `${process.pid}-${Math.random().toString(36).slice(2)}`;
    const temp = `${this.path}.${token}`;
    writeFileSync(temp, JSON.stringify({ pid: process.pid, host: hostname(), token, at: Date.now() }));
    try {
      for (;;) {
        try {
          linkSync(temp, this.path);
          return token;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        this.removeIfStale();
        if (Date.now() > deadline) {
          const owner = this.read();
          throw new Error(
            `the local state stayed locked for 120 s by ${owner ? `pid ${owner.pid}` : 'an unknown process'} (${this.path}); remove that file if no publish is running, then run again`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
      }
    } finally {
      rmSync(temp, { force: true });
    }
  }

  private read(): { pid: number; host: string; token: string; at: number } | null {
    try {
      const value = JSON.parse(readFileSync(this.path, 'utf8')) as { pid: number; host: string; token: string; at: number };
      return typeof value?.token === 'string' ? value : null;
    } catch {
      return null;
    }
  }

  private removeIfStale(): void {
    const owner = this.read();
    let stale: boolean;
    if (owner) {
      stale = Date.now() - owner.at > STALE_LOCK_MS || (owner.host === hostname() && !processExists(owner.pid));
    } else {
      try {
        stale = Date.now() - statSync(this.path).mtimeMs > 2000;
      } catch {
        return; // released meanwhile
      }
    }
    if (!stale) return;
    const tomb = `${this.path}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
    try {
      renameSync(this.path, tomb);
    } catch {
      return; // someone else removed it first
    }
    let moved: { token: string } | null = null;
    try {
      moved = JSON.parse(readFileSync(tomb, 'utf8')) as { token: string };
    } catch {
      moved = null;
    }
    if ((moved?.token ?? null) !== (owner?.token ?? null)) {
      // We moved a fresh lock taken after our check: put it back (unless the path is taken again).
      try {
        linkSync(tomb, this.path);
      } catch {
        /* the path was taken again; its owner proceeds */
      }
    }
    rmSync(tomb, { force: true });
  }
}
