import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { retryBusy } from '../../../scripts/lib/stores/local';
import { KILL_ENV } from '../../../scripts/lib/progress';
import { killableEnv, runScript, sleep, tempDir } from '../helpers';
import { missing } from '../../tools';

const work = tempDir('local-store');
afterAll(() => work.cleanup());

/** Live (not zombie) workerd processes whose environment holds `mark`. */
function workerdWith(mark: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes('(workerd)') || / Z /.test(stat.slice(stat.lastIndexOf(')')))) continue;
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').includes(mark)) found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return found;
}

describe('the local store (scripts/lib/stores/local.ts)', () => {
  it('retries what workerd reports for a busy SQLite ("internal error; reference = …"), and not other errors', async () => {
    let calls = 0;
    const value = await retryBusy(async () => {
      calls += 1;
      if (calls < 3) throw new Error('internal error; reference = vf8m5rkimqssko8mrnipkqhj');
      return 'done';
    });
    expect({ value, calls }).toEqual({ value: 'done', calls: 3 });

    let refused = 0;
    await expect(
      retryBusy(async () => {
        refused += 1;
        throw new Error('registry.example.com/acme/x 1.0.0 is already published with different contents');
      }),
    ).rejects.toThrow(/different contents/);
    expect(refused).toBe(1);

    // A 4xx is an answer, not a hiccup: only 5xx statuses count as transient.
    for (const message of ['KV PUT failed: 413 Payload Too Large', 'R2 GET failed: 404 Not Found']) {
      let calls4xx = 0;
      await expect(
        retryBusy(async () => {
          calls4xx += 1;
          throw new Error(message);
        }),
      ).rejects.toThrow(message);
      expect(calls4xx, message).toBe(1);
    }
    let calls5xx = 0;
    expect(
      await retryBusy(async () => {
        calls5xx += 1;
        if (calls5xx < 2) throw new Error('R2 PUT failed: 503 Service Unavailable');
        return 'stored';
      }),
    ).toBe('stored');
    expect(calls5xx).toBe(2);
  });

  const noSetpriv = process.platform !== 'linux' || spawnSync('setpriv', ['--help']).status !== 0;
  if (noSetpriv) console.warn('skipping the orphaned-workerd test: it needs Linux and util-linux setpriv (the wrapper is not used without them)');
  it.skipIf(missing('setpriv', !noSetpriv))('a publish killed with SIGKILL leaves no workerd running', async () => {
    const dir = join(work.dir, 'module');
    spawnSync('mkdir', ['-p', dir]);
    writeFileSync(join(dir, 'main.tf'), 'variable "a" {}\n');
    const mark = `EDGE_REGISTRY_TEST_MARK=${randomUUID()}`;
    const [name, value] = mark.split('=') as [string, string];
    const killed = await runScript(
      'publish-module',
      [dir, '--namespace', 'acme', '--name', 'orphan', '--system', 'aws', '--version', '1.0.0', '--persist-to', join(work.dir, 'state')],
      {
        [KILL_ENV]: 'documents',
        [name]: value,
        ...killableEnv(work.dir),
      },
    );
    expect(killed.code, killed.stderr).not.toBe(0);
    // The kernel delivers the parent-death signal at once; allow a moment for the exit.
    for (let i = 0; i < 50 && workerdWith(mark).length > 0; i++) await sleep(100);
    expect(workerdWith(mark)).toEqual([]);
  });
});
