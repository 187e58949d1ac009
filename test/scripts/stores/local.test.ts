import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { retryBusy } from '../../../scripts/lib/stores/local';
import { LocalRuntimeError } from '../../../scripts/lib/stores/local-errors';
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
  it('retries what workerd reports for a busy SQLite ("internal error; reference = …", answered 500 by the local runtime), and not other errors', async () => {
    let calls = 0;
    const value = await retryBusy(async () => {
      calls += 1;
      if (calls < 3) throw new LocalRuntimeError('KV write', 'k', 500, 'internal error; reference = vf8m5rkimqssko8mrnipkqhj');
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
    for (const [status, text] of [
      [413, 'Payload Too Large'],
      [404, 'unknown local runtime operation GET /x'],
    ] as const) {
      const message = `local R2 read of k failed: ${status} ${text}`;
      let calls4xx = 0;
      await expect(
        retryBusy(async () => {
          calls4xx += 1;
          throw new LocalRuntimeError('R2 read', 'k', status, text);
        }),
      ).rejects.toThrow(message);
      expect(calls4xx, message).toBe(1);
    }
    let calls5xx = 0;
    expect(
      await retryBusy(async () => {
        calls5xx += 1;
        if (calls5xx < 2) throw new LocalRuntimeError('R2 write', 'k', 503, 'Service Unavailable');
        return 'stored';
      }),
    ).toBe('stored');
    expect(calls5xx).toBe(2);

    // A connection to the runtime that broke (undici's "fetch failed" with the code as its cause) is retried;
    // a message that merely mentions a 5xx or "busy" is not.
    let connection = 0;
    expect(
      await retryBusy(async () => {
        connection += 1;
        if (connection < 2) throw new TypeError('fetch failed', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });
        return 'answered';
      }),
    ).toBe('answered');
    expect(connection).toBe(2);
    let worded = 0;
    await expect(
      retryBusy(async () => {
        worded += 1;
        throw new Error('acme/busy 5.0.0 is already published: 500 files differ');
      }),
    ).rejects.toThrow(/already published/);
    expect(worded).toBe(1);
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
        [KILL_ENV]: 'record',
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
