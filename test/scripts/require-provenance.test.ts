import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDemoModule } from '../../scripts/lib/demo/module';
import { readRegistryConfig } from '../../scripts/lib/config';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { listAuditEntries } from '../../src/store/audit/read';
import { runScript, writeDist, writeKeyFile } from './helpers';

/**
 * `npm run publisher -- require-provenance`: the local CLI (storage
 * credentials, no CI identity) is refused in such a namespace — provider and
 * module — with nothing written and a `refused` audit entry; `--off` lets
 * it publish again, with a signed publish attestation (not build provenance).
 */
let dir: string;
let state: string;
const SECRET = 'require-provenance-test-secret-0123456789abcdef';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-require-provenance-'));
  state = join(dir, 'state');
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function stored(prefix: string): Promise<string[]> {
  const store = await openLocalStore(await readRegistryConfig({ persistTo: state }));
  try {
    return (await store.blobs.list({ prefix })).objects.map((o) => o.key);
  } finally {
    await store.close();
  }
}

describe('require-provenance', { timeout: 240_000 }, () => {
  it("refuses the CLI's publishes into the namespace with nothing written and audited; --off accepts them with a publish attestation", async () => {
    const on = await runScript('publisher', ['require-provenance', '--namespace', 'strict', '--persist-to', state, '--json']);
    expect(on.code, on.stderr).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ requireProvenance: true });
    expect(on.stderr).toMatch(/now requires build provenance/);

    const key = await writeKeyFile(dir);
    const dist = await writeDist(join(dir, 'dist'), 'guarded', '1.0.0', { platforms: ['linux_amd64'] });
    const env = { SIGNING_KEY_SECRET: SECRET };
    const provider = await runScript('publish-provider', [dist, '--namespace', 'strict', '--key-file', key.path, '--persist-to', state], env);
    expect(provider.code, provider.stderr).toBe(1);
    expect(provider.stderr).toMatch(
      /namespace strict requires build provenance: only a trusted CI publisher may publish into it \(published by a publish token\)/,
    );
    expect(provider.stderr).toMatch(/require-provenance --namespace strict --off/);
    const tree = join(dir, 'module');
    writeDemoModule(tree, '1.0.0');
    const module = await runScript(
      'publish-module',
      [tree, '--namespace', 'strict', '--name', 'vpc', '--system', 'aws', '--version', '1.0.0', '--persist-to', state],
      env,
    );
    expect(module.code, module.stderr).toBe(1);
    expect(module.stderr).toMatch(/requires build provenance/);

    const host = (await readRegistryConfig({ persistTo: state })).hostname;
    expect(await stored(`${host}/strict/`)).toEqual([]);
    expect(await stored(`.records/${host}/strict/`)).toEqual([]);
    expect(await stored(`.module-records/${host}/strict/`)).toEqual([]);
    expect(await stored(`.provenance/`)).toEqual([]);
    const store = await openLocalStore(await readRegistryConfig({ persistTo: state }));
    try {
      const entries = (await listAuditEntries(store, { namespace: 'strict' })).entries;
      expect(
        entries
          .filter((e) => e.outcome === 'refused')
          .map((e) => e.action)
          .sort(),
      ).toEqual(['module.publish', 'provider.publish']);
      expect(entries.find((e) => e.action === 'publisher.require-provenance')).toMatchObject({ outcome: 'ok', reason: 'on' });
    } finally {
      await store.close();
    }

    expect((await runScript('publisher', ['require-provenance', '--namespace', 'strict', '--off', '--persist-to', state])).code).toBe(0);
    const again = await runScript('publish-provider', [dist, '--namespace', 'strict', '--key-file', key.path, '--persist-to', state], env);
    expect(again.code, again.stderr).toBe(0);
    expect((await stored(`.provenance/${host}/providers/strict/guarded/1.0.0/`)).length).toBe(1);
    expect((await runScript('publisher', ['list', '--namespace', 'strict', '--off', '--persist-to', state])).code).toBe(2);
  });
});
