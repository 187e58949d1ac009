import { linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { processExists } from '../process-exists';

/**
 * A cross-process lock around each single write to the local state. The
 * state's SQLite files are opened by every process's own workerd, which
 * fails (rather than waits) when two write at once; taking turns per write
 * keeps concurrent publishes working; one process's own writes (its one
 * workerd) share a held lock (SHARE_MS). (Exclusion of whole publishes is the
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

/**
 * How long the lock, once taken, is shared by further callers of the same StateLock (one local runtime:
 * its writes never meet each other's SQLite busy errors); a caller after that waits for its release, so a
 * holder's lock never ages towards STALE_LOCK_MS and other processes get their turn.
 */
const SHARE_MS = 5_000;

export class StateLock {
  /** The lock this instance holds: its token, when it was taken, how many `run`s are inside it, and its release. */
  private held: { token: string; at: number; holders: number; released: Promise<void>; release: () => void } | null = null;
  private taking: Promise<unknown> | null = null;

  /** `path`: the lock file (beside the state it guards). */
  constructor(private readonly path: string) {}

  /**
   * Runs `fn` holding the lock; throws (naming the owner and the file to remove) when it stays taken for 120 s.
   * Calls of one instance (one process, one local runtime) while it holds the lock, taken under SHARE_MS ago,
   * run inside it side by side; the lock file goes when the last of them ends.
   */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const held = await this.enter();
    try {
      return await fn();
    } finally {
      if (--held.holders === 0) {
        this.held = null;
        // Remove only our own lock (a stale-lock taker may have replaced it).
        if (this.read()?.token === held.token) rmSync(this.path, { force: true });
        held.release();
      }
    }
  }

  private async enter(): Promise<NonNullable<StateLock['held']>> {
    for (;;) {
      const held = this.held;
      if (held && Date.now() - held.at < SHARE_MS) {
        held.holders++;
        return held;
      }
      if (held) {
        await held.released;
        continue;
      }
      if (this.taking) {
        await this.taking.catch(() => undefined);
        continue;
      }
      const taking = this.acquire();
      this.taking = taking;
      try {
        const token = await taking;
        let release = () => {};
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        this.held = { token, at: Date.now(), holders: 1, released, release };
        return this.held;
      } finally {
        this.taking = null;
      }
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
