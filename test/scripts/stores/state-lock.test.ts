import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StateLock } from '../../../scripts/lib/stores/state-lock';
import { tempDir } from '../helpers';

const work = tempDir('state-lock');
afterAll(() => work.cleanup());

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('StateLock', () => {
  it('shares a held lock with the same instance’s calls, keeps another instance out until the last of them ends, then removes the file', async () => {
    const path = join(work.dir, 'shared.lock');
    const lock = new StateLock(path);
    const other = new StateLock(path); // another local runtime on the same state
    const events: string[] = [];
    const first = gate();
    const a = lock.run(async () => {
      events.push('a in');
      await first.opened;
      events.push('a out');
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Inside the held lock: runs at once, while `a` is still inside.
    const b = lock.run(async () => {
      events.push('b in');
      expect(existsSync(path)).toBe(true);
    });
    await b;
    const c = other.run(async () => {
      events.push('c in');
    });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(events).toEqual(['a in', 'b in']);
    first.open();
    await Promise.all([a, c]);
    expect(events).toEqual(['a in', 'b in', 'a out', 'c in']);
    expect(existsSync(path)).toBe(false);
  });

  it('releases the lock when the function throws', async () => {
    const path = join(work.dir, 'throws.lock');
    const lock = new StateLock(path);
    await expect(lock.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(existsSync(path)).toBe(false);
    await expect(new StateLock(path).run(async () => 'next')).resolves.toBe('next');
  });
});
