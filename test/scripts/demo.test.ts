import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../scripts/lib/config';
import { DEMO_PLATFORMS, DEMO_VERSIONS, publishDemo } from '../../scripts/lib/demo/provider';
import { publishRelease } from '../../scripts/lib/provider/publish';
import { recordServer } from '../../scripts/lib/dev/server';
import { configPath, runScript, tempDir, writeDist } from './helpers';

/** Local mode without a key (one is generated into the keys folder) and npm run demo. */

const { dir, cleanup } = tempDir('demo');
afterAll(cleanup);

describe('local mode without a key', () => {
  it('generates one into the keys folder with a warning, registers it, and uses it next time', async () => {
    const localState = join(dir, 'state-local');
    const keysDir = join(dir, 'local-keys');
    const config = await readRegistryConfig({ configPath, persistTo: localState });
    const lines: string[] = [];
    const dist = await writeDist(join(dir, 'dist-local'), 'y', '1.0.0', { platforms: ['linux_amd64'] });
    const result = await publishRelease({ paths: [dist], namespace: 'fresh', config, keysDir, log: (l) => lines.push(l), processEnv: {} });
    const keyPath = join(keysDir, 'registry.example.com', 'fresh.asc');
    expect(existsSync(keyPath)).toBe(true);
    expect(statSync(keyPath).mode & 0o777).toBe(0o600);
    expect(lines.join('\n')).toMatch(
      new RegExp(`warning: no signing key for namespace fresh: generated RSA-4096 key ${result.key_id} into .*fresh\\.asc \\(git-ignored; local mode only`),
    );
    const next = await writeDist(join(dir, 'dist-local-2'), 'y', '1.1.0', { platforms: ['linux_amd64'] });
    const second = await publishRelease({ paths: [next], namespace: 'fresh', config, keysDir, log: (l) => lines.push(l), processEnv: {} });
    expect(second.key_id).toBe(result.key_id);
  });
});

describe('npm run demo', () => {
  it('publishes demo/example (4 versions × 4 platforms) and is idempotent', async () => {
    const demoState = join(dir, 'state-demo');
    const keysDir = join(dir, 'demo-keys');
    const first = await publishDemo({ configPath, persistTo: demoState, keysDir, processEnv: {} });
    expect(first.map((r) => [r.version, r.status, r.platforms.length])).toEqual(DEMO_VERSIONS.map((v) => [v, 'published', DEMO_PLATFORMS.length]));
    expect(first.find((r) => r.version === '2.0.0-beta.1')!.protocols).toEqual(['6.0']);
    const cli = await runScript('demo', ['--persist-to', demoState, '--keys-dir', keysDir, '--json']);
    expect(cli.code, cli.stderr).toBe(0);
    const second = JSON.parse(cli.stdout) as typeof first;
    expect(second.map((r) => r.status)).toEqual(DEMO_VERSIONS.map(() => 'unchanged'));
    expect(second.map((r) => r.platforms)).toEqual(first.map((r) => r.platforms));
    // Its closing hint names the server `npm start` runs on that state, not a default port.
    const forget = recordServer(demoState, 'http://localhost:8799');
    try {
      const human = await runScript('demo', ['--persist-to', demoState, '--keys-dir', keysDir]);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stderr).toContain('Your npm start at http://localhost:8799 serves it now');
      expect(human.stderr).toContain('curl http://localhost:8799/v1/modules/demo/vpc/aws/versions');
      expect(human.stderr).not.toContain('8787');
    } finally {
      forget();
    }
  });
});
