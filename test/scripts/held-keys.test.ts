import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../scripts/lib/config';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { heldSigningKeyKey } from '../../src/store/layout';
import { signShasumsWithHeldKey } from '../../src/store/keys/held-keys';
import { readSigningKeys } from '../../src/store/providers/signing-keys';
import { configPath, runScript, tempDir, writeKeyFile } from './helpers';

/**
 * npm run keys -- generate|import --held-by-registry: the private key goes
 * only into the store, sealed; what the registry signs with it verifies with
 * real GnuPG against the registered public key.
 */
const { dir, cleanup } = tempDir('held-keys');
const state = join(dir, 'state');
const SECRET = 'held-keys-cli-test-secret-0123456789abcdef';
const env = { SIGNING_KEY_SECRET: SECRET };
afterAll(cleanup);

async function withStore<T>(fn: (kv: Awaited<ReturnType<typeof openLocalStore>>['kv']) => Promise<T>): Promise<T> {
  const store = await openLocalStore(await readRegistryConfig({ configPath, persistTo: state }));
  try {
    return await fn(store.kv);
  } finally {
    await store.close();
  }
}

function gpgVerify(publicArmor: string, document: Uint8Array, signature: Uint8Array, name: string): string {
  const home = join(dir, `gnupg-${name}`);
  mkdirSync(home, { recursive: true });
  chmodSync(home, 0o700);
  writeFileSync(join(dir, `${name}.sums`), document);
  writeFileSync(join(dir, `${name}.sig`), signature);
  try {
    execFileSync('gpg', ['--batch', '--homedir', home, '--import'], { input: publicArmor, stdio: ['pipe', 'pipe', 'pipe'] });
    const result = spawnSync('gpg', ['--batch', '--homedir', home, '--status-fd', '1', '--verify', join(dir, `${name}.sig`), join(dir, `${name}.sums`)], {
      encoding: 'utf8',
    });
    return `${result.status}\n${result.stdout}`;
  } finally {
    spawnSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
  }
}

const sums = new TextEncoder().encode(`${'b'.repeat(64)}  terraform-provider-thing_1.0.0_linux_amd64.zip\n`);

describe('npm run keys -- --held-by-registry', () => {
  it('generate stores the private key sealed (no file, nothing printed); the registry signs with it and gpg --verify accepts the signature', async () => {
    const before = existsSync(join(dir, '.keys')) ? readdirSync(join(dir, '.keys')) : [];
    const result = await runScript(
      'keys',
      ['generate', '--namespace', 'acme', '--held-by-registry', '--type', 'ecc', '--persist-to', state, '--keys-dir', join(dir, '.keys'), '--json'],
      env,
    );
    expect(result.code, result.stderr).toBe(0);
    const { key_id } = JSON.parse(result.stdout) as { key_id: string };
    expect(result.stdout + result.stderr).not.toMatch(/PRIVATE KEY|PUBLIC KEY BLOCK/);
    expect(result.stderr).toContain('held by the registry');
    expect(existsSync(join(dir, '.keys')) ? readdirSync(join(dir, '.keys')) : []).toEqual(before);

    const { publicKeys, record, signed, other } = await withStore(async (kv) => ({
      publicKeys: await readSigningKeys(kv, 'registry.example.com', 'acme'),
      record: (await kv.get(heldSigningKeyKey('registry.example.com', 'acme'), 'text'))!,
      signed: await signShasumsWithHeldKey({ kv }, { signingKeySecret: SECRET }, 'registry.example.com', 'acme', sums),
      other: await signShasumsWithHeldKey({ kv }, { signingKeySecret: SECRET }, 'registry.example.com', 'other', sums),
    }));
    expect(publicKeys.map((k) => k.key_id)).toEqual([key_id]);
    expect(record).not.toMatch(/PRIVATE|PGP/);
    expect(other).toBeNull();
    expect(signed?.keyId).toBe(key_id);
    const gpg = gpgVerify(publicKeys[0]!.ascii_armor, sums, signed!.signature, 'generated');
    expect(gpg).toMatch(/^0\n/);
    expect(gpg).toMatch(new RegExp(`VALIDSIG [0-9A-F]*${key_id} `));

    const list = await runScript('keys', ['list', '--namespace', 'acme', '--persist-to', state, '--json'], env);
    expect(JSON.parse(list.stdout)).toMatchObject({ held_by_registry: key_id });
    expect((await runScript('keys', ['list', '--namespace', 'acme', '--persist-to', state], env)).stdout).toContain('(held by the registry)');
  });

  it('generate with the default type (RSA-4096) holds a key the registry signs with through WebCrypto; gpg --verify accepts the signature', async () => {
    const result = await runScript(
      'keys',
      ['generate', '--namespace', 'rsa', '--held-by-registry', '--persist-to', state, '--keys-dir', join(dir, '.keys'), '--json'],
      env,
    );
    expect(result.code, result.stderr).toBe(0);
    const { key_id } = JSON.parse(result.stdout) as { key_id: string };
    const { publicKeys, signed } = await withStore(async (kv) => ({
      publicKeys: await readSigningKeys(kv, 'registry.example.com', 'rsa'),
      signed: await signShasumsWithHeldKey({ kv }, { signingKeySecret: SECRET }, 'registry.example.com', 'rsa', sums),
    }));
    // gpg's status line: VALIDSIG FINGERPRINT DATE TIMESTAMP EXPIRE VERSION RESERVED PUBKEY-ALGO HASH-ALGO CLASS …
    const gpg = gpgVerify(publicKeys[0]!.ascii_armor, sums, signed!.signature, 'generated-rsa');
    expect(gpg).toMatch(/^0\n/);
    expect(gpg).toMatch(new RegExp(`VALIDSIG [0-9A-F]*${key_id} \\S+ \\d+ 0 4 0 1 8 00 `));
  });

  it('import of a private key file holds it (replacing the previous held key, whose public key stays registered); remove deletes it', async () => {
    const key = await writeKeyFile(dir, 'import.asc', 'ecc');
    const result = await runScript(
      'keys',
      ['import', '--namespace', 'acme', '--key-file', key.path, '--held-by-registry', '--persist-to', state, '--json'],
      env,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ key_id: key.keyId, held_by_registry: true });
    const signed = await withStore((kv) => signShasumsWithHeldKey({ kv }, { signingKeySecret: SECRET }, 'registry.example.com', 'acme', sums));
    expect(signed?.keyId).toBe(key.keyId);
    expect(gpgVerify(key.publicArmor, sums, signed!.signature, 'imported')).toMatch(/^0\n/);
    expect(await withStore(async (kv) => (await readSigningKeys(kv, 'registry.example.com', 'acme')).length)).toBe(2);

    const removed = await runScript('keys', ['remove', '--namespace', 'acme', '--key-id', key.keyId, '--persist-to', state], env);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stderr).toContain('registry-held private key was deleted');
    expect(await withStore((kv) => signShasumsWithHeldKey({ kv }, { signingKeySecret: SECRET }, 'registry.example.com', 'acme', sums))).toBeNull();
  });

  it('refusals: --remote without SIGNING_KEY_SECRET, a short secret, --key-file with generate, import without a private key, --held-by-registry on list; nothing written', async () => {
    const snapshot = () => withStore(async (kv) => JSON.stringify(await kv.list({ prefix: '' })));
    const before = await snapshot();
    const cases: [string[], NodeJS.ProcessEnv, number, RegExp][] = [
      [
        ['generate', '--held-by-registry', '--remote'],
        { SIGNING_KEY_SECRET: '', CLOUDFLARE_ACCOUNT_ID: 'x', CLOUDFLARE_API_TOKEN: 'y' },
        1,
        /set SIGNING_KEY_SECRET to the Worker's secret/,
      ],
      [['generate', '--held-by-registry'], { SIGNING_KEY_SECRET: 'too-short' }, 1, /at least 32 characters/],
      [['generate', '--held-by-registry', '--key-file', join(dir, 'x.asc')], env, 2, /writes no private key file/],
      [['import', '--held-by-registry'], { ...env, EDGE_REGISTRY_SIGNING_KEY: '' }, 1, /needs the private key/],
      [['list', '--held-by-registry'], env, 2, /option of generate and import/],
    ];
    for (const [args, extra, code, message] of cases) {
      const result = await runScript('keys', [...args, '--namespace', 'acme', '--persist-to', state], extra);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(code);
      expect(result.stderr).toMatch(message);
    }
    expect(await snapshot()).toBe(before);
    expect(readFileSync(join(dir, 'import.asc'), 'utf8')).toContain('PRIVATE KEY');
  });
});
