import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/store/audit/entry';
import { listAllKeys, listAllObjectKeys } from '../../src/store/list';
import { readRegistryConfig } from '../../scripts/lib/config';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { configPath, runScript, tempDir, writeDist, writeKeyFile } from './helpers';

/**
 * `npm run lifecycle` as a maintainer runs it, on a local state: exit codes,
 * messages, concurrent changes, and the audit entries it leaves. What the
 * Worker serves afterwards is test/worker/lifecycle/; real terraform init is
 * test/e2e/lifecycle.test.ts.
 */
const { dir, cleanup } = tempDir('lifecycle');
const state = join(dir, 'state');
const at = ['--persist-to', state, '--config', configPath];
afterAll(cleanup);

const lifecycle = (...args: string[]) => runScript('lifecycle', [...args, ...at]);

/** Every KV key with its value and every R2 object with its etag of the local state, read through Miniflare's bindings. */
async function stored(): Promise<string[]> {
  const store = await openLocalStore(await readRegistryConfig({ configPath, persistTo: state }));
  try {
    const kv = await Promise.all((await listAllKeys(store.kv, '')).map(async (key) => `kv:${key}=${await store.kv.get(key, 'text')}`));
    const r2 = await Promise.all((await listAllObjectKeys(store.blobs, '')).map(async (key) => `r2:${key} ${(await store.blobs.head(key))?.etag}`));
    return [...kv, ...r2].sort();
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  const key = await writeKeyFile(dir);
  for (const version of ['1.0.0', '1.1.0', '1.2.0']) {
    const dist = await writeDist(join(dir, `dist-${version}`), 'thing', version, { platforms: ['linux_amd64'] });
    const published = await runScript('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path, ...at]);
    expect(published.code, published.stderr).toBe(0);
  }
  const module = join(dir, 'module');
  mkdirSync(module, { recursive: true });
  writeFileSync(join(module, 'main.tf'), 'variable "name" {\n  type = string\n}\n');
  for (const version of ['1.0.0', '2.0.0']) {
    const published = await runScript('publish-module', [module, '--namespace', 'acme', '--name', 'vpc', '--system', 'aws', '--version', version, ...at]);
    expect(published.code, published.stderr).toBe(0);
  }
});

describe('npm run lifecycle', () => {
  it('withdraws and deprecates provider versions (also concurrently), says so, and is idempotent', async () => {
    const [withdrawn, deprecated] = await Promise.all([
      lifecycle('withdraw', 'acme/thing', '--version', '1.2.0', '--message', 'breaks <b>imports</b>', '--json'),
      lifecycle('deprecate', 'acme/thing', '--version', '1.0.0', '--message', 'use 1.1', '--json'),
    ]);
    expect(withdrawn.code, withdrawn.stderr).toBe(0);
    expect(deprecated.code, deprecated.stderr).toBe(0);
    expect(withdrawn.stderr).toContain('registry.example.com/acme/thing 1.2.0: withdrawn');
    // Both changes held the lease in turn: the state has both, whichever ran second.
    const status = await lifecycle('status', 'acme/thing', '--json');
    expect(status.code, status.stderr).toBe(0);
    const { lifecycle: marks, versions } = JSON.parse(status.stdout) as {
      lifecycle: { versions: Record<string, { deprecated?: { message: string }; withdrawn?: { message: string } }> };
      versions: string[];
    };
    expect(versions).toEqual(['1.0.0', '1.1.0', '1.2.0']);
    expect(marks.versions['1.2.0']?.withdrawn?.message).toBe('breaks <b>imports</b>');
    expect(marks.versions['1.0.0']?.deprecated?.message).toBe('use 1.1');

    const again = await lifecycle('withdraw', 'acme/thing', '--version', '1.2.0', '--message', 'breaks <b>imports</b>', '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).status).toBe('unchanged');
    expect(again.stderr).toContain('already withdrawn; nothing changed');
  });

  it('works on modules (NS/NAME/SYSTEM)', async () => {
    const withdrawn = await lifecycle('withdraw', 'acme/vpc/aws', '--version', '2.0.0', '--message', 'wrong CIDR defaults', '--json');
    expect(withdrawn.code, withdrawn.stderr).toBe(0);
    expect(JSON.parse(withdrawn.stdout)).toMatchObject({ kind: 'module', address: 'registry.example.com/acme/vpc/aws', status: 'changed' });
    const restored = await lifecycle('restore', 'acme/vpc/aws', '--version', '2.0.0', '--json');
    expect(JSON.parse(restored.stdout).lifecycle).toEqual({ versions: {} });
  });

  it('refuses bad input with exit 1 (or 2 for usage), a message naming the fix, and no change', async () => {
    const cases: [string[], number, RegExp][] = [
      [['deprecate', 'acme/thing', '--version', '9.9.9', '--message', 'x'], 1, /has no version 9\.9\.9; published: 1\.0\.0, 1\.1\.0, 1\.2\.0/],
      [['withdraw', 'acme/nothing', '--version', '1.0.0', '--message', 'x'], 1, /registry\.example\.com\/acme\/nothing has no published version/],
      [['withdraw', 'acme/thing', '--version', '1.1.0'], 1, /withdraw needs --message/],
      [['withdraw', 'acme/thing', '--message', 'x'], 1, /withdraw needs --version/],
      [['deprecate', 'acme/thing', '--message', 'two\nlines'], 1, /one line without control characters/],
      [['deprecate', 'acme/thing', '--message', 'x'.repeat(1001)], 1, /keep it under 1000/],
      [['restore', 'acme/thing', '--version', '1.1.0', '--message', 'x'], 1, /restore takes no --message/],
      [['deprecate', 'acme/thing', '--version', 'v1.0', '--message', 'x'], 1, /version/],
      [['deprecate', 'acme', '--message', 'x'], 1, /neither a provider .* nor a module/],
      [['yank', 'acme/thing'], 2, /unknown command "yank"/],
      [['deprecate'], 2, /give exactly one address/],
    ];
    const before = (await lifecycle('status', 'acme/thing', '--json')).stdout;
    // Every KV key and R2 object as it was: an unknown provider, module or version takes no lease and leaves no audit entry.
    const everything = await stored();
    expect(everything.some((line) => line.startsWith('r2:.leases/providers/'))).toBe(true);
    const results = await Promise.all(cases.map(([args]) => lifecycle(...args)));
    cases.forEach(([args, code, message], i) => {
      expect(results[i]!.code, `${args.join(' ')}: ${results[i]!.stderr}`).toBe(code);
      expect(results[i]!.stderr).toMatch(message);
    });
    expect(await stored()).toEqual(everything);
    expect((await lifecycle('status', 'acme/thing', '--json')).stdout).toBe(before);
  });

  it('refuses a module version it does not hold the same way: exit 1 listing the published ones, nothing written', async () => {
    const everything = await stored();
    const unknown = await lifecycle('withdraw', 'acme/vpc/aws', '--version', '3.0.0', '--message', 'x');
    expect(unknown.code, unknown.stderr).toBe(1);
    expect(unknown.stderr).toMatch(/module registry\.example\.com\/acme\/vpc\/aws has no version 3\.0\.0; published: 1\.0\.0, 2\.0\.0/);
    expect(await stored()).toEqual(everything);
  });

  it('leaves an audit entry for every change (actor: the operator), none for a target it does not hold', async () => {
    const audit = await runScript('audit', ['--json', ...at]);
    expect(audit.code, audit.stderr).toBe(0);
    const entries = (JSON.parse(audit.stdout) as { entries: AuditEntry[] }).entries.filter((e) => e.action.startsWith('lifecycle.'));
    const lines = entries.map((e) => `${e.action} ${e.outcome} ${e.target}`);
    expect(lines).toEqual(
      expect.arrayContaining([
        'lifecycle.withdraw ok registry.example.com/acme/thing 1.2.0',
        'lifecycle.deprecate ok registry.example.com/acme/thing 1.0.0',
        'lifecycle.withdraw unchanged registry.example.com/acme/thing 1.2.0',
        'lifecycle.withdraw ok registry.example.com/acme/vpc/aws 2.0.0',
        'lifecycle.restore ok registry.example.com/acme/vpc/aws 2.0.0',
      ]),
    );
    expect(entries.filter((e) => e.outcome === 'refused')).toEqual([]);
    expect(entries.find((e) => e.target.endsWith('1.2.0') && e.outcome === 'ok')).toMatchObject({
      actor: { kind: 'operator', via: 'local' },
      reason: 'breaks <b>imports</b>',
    });
  });
});
