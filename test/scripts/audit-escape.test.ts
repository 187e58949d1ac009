import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { readRegistryConfig } from '../../scripts/lib/config';
import { appendAuditEntry } from '../../src/store/audit/write';
import { configPath, runScript, tempDir } from './helpers';

/**
 * `npm run audit` as a terminal reader meets it: a refused CI token's claims
 * (chosen by whoever minted the token) printed with every control character
 * escaped, and a listing longer than --limit paged with the printed --after.
 */

const { dir, cleanup } = tempDir('audit-escape');
const state = join(dir, 'state');
afterAll(cleanup);
const at = ['--persist-to', state, '--config', configPath];

describe('npm run audit prints what others wrote, escaped, a page at a time', () => {
  it('an ESC sequence in a claim comes out as \\x1b; --limit pages with the --after it prints', async () => {
    const config = await readRegistryConfig({ configPath, persistTo: state });
    const store = await openLocalStore(config);
    try {
      const time = Date.now() - 60_000;
      await appendAuditEntry(store, {
        time: new Date(time).toISOString(),
        actor: { kind: 'ci', issuer: 'https://token.actions.githubusercontent.com', subject: 'repo:x', repository: 'x\u001b[2J\u001b[H' },
        action: 'provider.publish',
        target: 'registry.example.com/acme/thing 1.0.0',
        outcome: 'refused',
        reason: 'no trusted publisher matches x\u001b]0;title\u0007\u202e',
      });
      await appendAuditEntry(store, {
        time: new Date(time + 1000).toISOString(),
        actor: { kind: 'operator', via: 'local' },
        action: 'key.add',
        target: 'registry.example.com/acme',
        outcome: 'ok',
      });
    } finally {
      await store.close();
    }

    const listed = await runScript('audit', at);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('[x\\x1b[2J\\x1b[H]');
    expect(listed.stdout).toContain('matches x\\x1b]0;title\\x07\\u202e');
    expect(listed.stdout + listed.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f\u202e]/);
    // --json keeps the values as stored (JSON escapes them itself).
    const json = await runScript('audit', ['--json', ...at]);
    expect(JSON.parse(json.stdout).entries[0].actor.repository).toBe('x\u001b[2J\u001b[H');
    expect(json.stdout).not.toContain('\u001b');

    const first = await runScript('audit', ['--limit', '1', ...at]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('thing 1.0.0');
    expect(first.stdout).not.toContain('key.add');
    const after = /--after (\S+)/.exec(first.stderr)?.[1];
    expect(after, first.stderr).toMatch(/^\.audit\//);
    const second = await runScript('audit', ['--limit', '1', '--after', after!, ...at]);
    expect(second.stdout).toContain('key.add');
    expect(second.stdout).not.toContain('thing 1.0.0');
    expect(second.stderr).not.toContain('--after');
    expect((await runScript('audit', ['--after', 'nonsense', ...at])).code).toBe(1);
    expect((await runScript('audit', ['--limit', '0', ...at])).code).toBe(1);
  });
});
