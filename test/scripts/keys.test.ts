import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../scripts/lib/config';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { readSigningKeys } from '../../src/store/providers/signing-keys';
import { configPath, runScript, tempDir, writeDist } from './helpers';

/** npm run keys (real GnuPG checks the generated keys). Local-mode key generation and npm run demo: demo.test.ts. */

const { dir, cleanup } = tempDir('keys');
const state = join(dir, 'state');
afterAll(cleanup);

/** Imports an armored public key into a throwaway GNUPGHOME; returns gpg's colon listing. */
function gpgImport(armored: string, name: string): string {
  const home = join(dir, `gnupg-${name}`);
  mkdirSync(home, { recursive: true });
  chmodSync(home, 0o700);
  try {
    execFileSync('gpg', ['--batch', '--homedir', home, '--import'], { input: armored, stdio: ['pipe', 'pipe', 'pipe'] });
    return execFileSync('gpg', ['--batch', '--homedir', home, '--with-colons', '--list-keys'], { encoding: 'utf8' });
  } finally {
    spawnSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
  }
}

describe('npm run keys', () => {
  it('generate makes an RSA-4096 OpenPGP v4 key GnuPG accepts, writes the private key 0600, registers the public key, prints no secret', async () => {
    const keyFile = join(dir, 'rsa.asc');
    const result = await runScript('keys', ['generate', '--namespace', 'acme', '--key-file', keyFile, '--persist-to', state, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { key_id } = JSON.parse(result.stdout) as { key_id: string };
    expect(key_id).toMatch(/^[0-9A-F]{16}$/);
    expect(result.stdout + result.stderr).not.toMatch(/PRIVATE KEY|PUBLIC KEY BLOCK/);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyFile, 'utf8')).toMatch(/^-----BEGIN PGP PRIVATE KEY BLOCK-----/);

    const store = await openLocalStore(await readRegistryConfig({ configPath, persistTo: state }));
    const keys = await readSigningKeys(store.kv, 'registry.example.com', 'acme');
    await store.close();
    expect(keys.map((k) => k.key_id)).toEqual([key_id]);
    const listing = gpgImport(keys[0]!.ascii_armor, 'rsa');
    // pub:-:4096:1:KEYID:…  (algorithm 1 = RSA), and GnuPG prints the same key id.
    expect(listing).toMatch(new RegExp(`^pub:[^:]*:4096:1:${key_id}:`, 'm'));
  });

  it('generate --type ecc makes a v4 ed25519 key GnuPG accepts; import is idempotent; list and remove', async () => {
    const keyFile = join(dir, 'ecc.asc');
    const result = await runScript('keys', ['generate', '--namespace', 'acme', '--type', 'ecc', '--key-file', keyFile, '--persist-to', state, '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { key_id } = JSON.parse(result.stdout) as { key_id: string };
    const list = await runScript('keys', ['list', '--namespace', 'acme', '--persist-to', state, '--json']);
    const keys = JSON.parse(list.stdout).keys as { key_id: string; status: string; algorithm: string }[];
    expect(keys.map((k) => [k.status, k.algorithm.split(' ')[0]])).toEqual([
      ['registered', 'rsaEncryptSign-4096'],
      ['registered', 'eddsaLegacy'],
    ]);

    const store = await openLocalStore(await readRegistryConfig({ configPath, persistTo: state }));
    const armored = (await readSigningKeys(store.kv, 'registry.example.com', 'acme')).find((k) => k.key_id === key_id)!.ascii_armor;
    await store.close();
    expect(gpgImport(armored, 'ecc')).toMatch(new RegExp(`^pub:[^:]*:255:22:${key_id}:`, 'm')); // 22 = EdDSA

    const again = await runScript('keys', ['import', '--namespace', 'acme', '--key-file', keyFile, '--persist-to', state]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(new RegExp(`key ${key_id} is already registered`));

    const removed = await runScript('keys', ['remove', '--namespace', 'acme', '--key-id', key_id, '--persist-to', state]);
    expect(removed.code, removed.stderr).toBe(0);
    const missing = await runScript('keys', ['remove', '--namespace', 'acme', '--key-id', key_id, '--persist-to', state]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(new RegExp(`namespace acme has no signing key ${key_id}`));
    const usage = await runScript('keys', ['rotate', '--namespace', 'acme']);
    expect(usage.code).toBe(2);
  });

  it('refuses a key file tracked by git', async () => {
    const tracked = join(dir, 'repo');
    mkdirSync(tracked, { recursive: true });
    execFileSync('git', ['init', '-q'], { cwd: tracked });
    execFileSync('cp', [join(dir, 'rsa.asc'), join(tracked, 'key.asc')]);
    execFileSync('git', ['add', 'key.asc'], { cwd: tracked });
    const dist = await writeDist(join(dir, 'dist-tracked'), 'x', '1.0.0', { platforms: ['linux_amd64'] });
    const result = await runScript('publish-provider', [dist, '--namespace', 'acme', '--persist-to', state, '--key-file', join(tracked, 'key.asc')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/key\.asc is tracked by git; a private key must never be in the repository/);
  });
});
