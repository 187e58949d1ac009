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
  it('runs one instance’s calls one at a time in the order made, keeps another instance out while one runs, and removes the file after', async () => {
    const path = join(work.dir, 'turns.lock');
    const lock = new StateLock(path);
    const other = new StateLock(path); // another process's local runtime on the same state
    const events: string[] = [];
    const first = gate();
    const a = lock.run(async () => {
      events.push('a in');
      expect(existsSync(path)).toBe(true);
      await first.opened;
      events.push('a out');
    });
    const b = lock.run(async () => {
      events.push('b in');
      events.push('b out');
    });
    const c = lock.run(async () => {
      events.push('c in');
      events.push('c out');
    });
    const d = other.run(async () => {
      events.push('d in');
    });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(events).toEqual(['a in']);
    first.open();
    await Promise.all([a, b, c, d]);
    expect(events.filter((e) => e !== 'd in')).toEqual(['a in', 'a out', 'b in', 'b out', 'c in', 'c out']);
    expect(events.indexOf('d in')).toBeGreaterThan(events.indexOf('a out'));
    expect(existsSync(path)).toBe(false);
  });

  it('releases the lock, and the next call’s turn, when the function throws', async () => {
    const path = join(work.dir, 'throws.lock');
    const lock = new StateLock(path);
    const failed = lock.run(async () => Promise.reject(new Error('boom')));
    const next = lock.run(async () => 'next');
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
    expect(existsSync(path)).toBe(false);
    await expect(new StateLock(path).run(async () => 'other')).resolves.toBe('other');
  });
});
