import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../../src/store/audit/entry';
import { configPath, runScript, tempDir, writeDist, writeKeyFile } from '../helpers';

/**
 * `npm run mirror -- remove` as an operator runs it: a mirrored upstream
 * version (published here under registry.terraform.io, as the e2e fixture
 * does) is removed and `mirror list` no longer shows it; our own versions and
 * bad input are refused with exit 1/2; every attempt leaves an audit entry.
 * What the Worker serves afterwards: test/worker/mirror-remove/.
 */
const { dir, cleanup } = tempDir('mirror-remove');
const at = ['--persist-to', join(dir, 'state')];
afterAll(cleanup);

describe('npm run mirror -- remove', () => {
  it('removes a mirrored version, refuses our own and bad input, and audits each', async () => {
    const key = await writeKeyFile(dir);
    for (const version of ['3.5.0', '3.6.0']) {
      const dist = await writeDist(join(dir, `dist-${version}`), 'random', version, { platforms: ['linux_amd64'] });
      const published = await runScript('publish-provider', [
        dist,
        '--namespace',
        'hashicorp',
        '--hostname',
        'registry.terraform.io',
        '--key-file',
        key.path,
        ...at,
        '--config',
        configPath,
      ]);
      expect(published.code, published.stderr).toBe(0);
    }
    const removed = await runScript('mirror', ['remove', 'hashicorp/random', '--version', '3.5.0', '--json', ...at]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(removed.stdout)).toMatchObject({
      address: 'registry.terraform.io/hashicorp/random',
      version: '3.5.0',
      status: 'removed',
      remaining: ['3.6.0'],
    });
    expect(removed.stderr).toContain('the mirror still holds 3.6.0');
    const list = JSON.parse((await runScript('mirror', ['list', '--json', ...at])).stdout) as {
      providers: { address: string; versions: { version: string }[] }[];
    };
    expect(list.providers.find((p) => p.address === 'registry.terraform.io/hashicorp/random')?.versions.map((v) => v.version)).toEqual(['3.6.0']);

    const [own, again, usage, noVersion] = await Promise.all([
      runScript('mirror', ['remove', 'registry.example.com/acme/thing', '--version', '1.0.0', ...at]),
      runScript('mirror', ['remove', 'hashicorp/random', '--version', '3.5.0', ...at]),
      runScript('mirror', ['remove', 'hashicorp/random', 'extra', '--version', '3.5.0', ...at]),
      runScript('mirror', ['remove', 'hashicorp/random', ...at]),
    ]);
    expect(own.code).toBe(1);
    expect(own.stderr).toContain('published versions are never deleted');
    expect(own.stderr).toContain('npm run lifecycle -- withdraw acme/thing --version 1.0.0');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('the mirror holds no registry.terraform.io/hashicorp/random 3.5.0; it holds 3.6.0');
    expect([usage.code, noVersion.code]).toEqual([2, 2]);
    expect(noVersion.stderr).toContain('remove needs --version');

    const audit = JSON.parse((await runScript('audit', ['--json', ...at])).stdout) as { entries: AuditEntry[] };
    const lines = audit.entries
      .filter((e) => e.action === 'mirror.remove')
      .map((e) => `${e.outcome} ${e.target}`)
      .sort();
    expect(lines).toEqual([
      'ok registry.terraform.io/hashicorp/random 3.5.0',
      'refused registry.example.com/acme/thing 1.0.0',
      'refused registry.terraform.io/hashicorp/random 3.5.0',
    ]);
  });
});
