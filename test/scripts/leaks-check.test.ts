import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import setup from '../fixtures/leaks.setup';

/** The run's leak check (test/fixtures/leaks.setup.ts, a globalSetup) can fail: a leftover daemon and folder are found, stopped and removed. */
describe('the leak check', () => {
  it("fails naming a process left running from the run's temp dir and a folder left in it, and cleans both up", async () => {
    const outer = process.env.TMPDIR;
    const teardown = setup();
    const runDir = tmpdir();
    expect(runDir).toMatch(/edge-registry-run-/);
    const folder = mkdtempSync(join(tmpdir(), 'edge-registry-forgotten-'));
    // A daemon like gpg-agent: detached from us (its parent exits), environment inherited.
    const pid = Number(spawnSync('sh', ['-c', 'sleep 60 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }).stdout.trim());
    const failure = await teardown().then(
      () => null,
      (error: Error) => error.message,
    );
    expect(process.env.TMPDIR).toBe(outer);
    expect(failure).toContain(`process ${pid} still running: sleep 60`);
    expect(failure).toMatch(/edge-registry-forgotten-\w+ left in the temp directory/);
    expect(existsSync(folder)).toBe(false);
    expect(existsSync(runDir)).toBe(false);
    // Killed: gone, or a zombie until its new parent reaps it.
    const state = () => (existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]?.[0] : 'gone');
    await expect.poll(() => ['gone', 'Z'].includes(state()!)).toBe(true);
  });

  it('passes when nothing is left', async () => {
    const teardown = setup();
    await expect(teardown()).resolves.toBeUndefined();
  });
});
