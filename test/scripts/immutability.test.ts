import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig, type RegistryConfig } from '../../scripts/lib/config';
import { addNamespaceKey } from '../../scripts/lib/keys/namespace-keys';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { type StoreHandle } from '../../scripts/lib/stores/handle';
import { publishRelease } from '../../scripts/lib/provider/publish';
import { configPath, tempDir, writeDist, writeKeyFile } from './helpers';

/**
 * publish-provider decides "already published" by content: a rebuild whose
 * zips have the same names and sizes but other bytes is refused (409), as is
 * a change of protocols or platforms; only identical bytes are "unchanged".
 */

const { dir, cleanup } = tempDir('immutability');
let config: RegistryConfig;
let store: StoreHandle;
let keyFile: string;

beforeAll(async () => {
  config = await readRegistryConfig({ configPath, persistTo: join(dir, 'state') });
  store = await openLocalStore(config, { registry: {} });
  const key = await writeKeyFile(dir);
  keyFile = key.path;
  await addNamespaceKey(store.kv, config.hostname, 'acme', { key_id: key.keyId, ascii_armor: key.publicArmor });
  const first = await publishRelease({ paths: [await dist('original', 'aaaa')], namespace: 'acme', config, store, keyFile });
  expect(first.status).toBe('published');
});
afterAll(async () => {
  await store?.close();
  cleanup();
});

const dist = (name: string, salt: string, options: Parameters<typeof writeDist>[3] = {}) =>
  writeDist(join(dir, name), 'same', '1.0.0', { platforms: ['linux_amd64', 'windows_amd64'], salt, ...options });

const zips = (path: string) =>
  readdirSync(path)
    .filter((f) => f.endsWith('.zip'))
    .sort();

async function storedState(): Promise<string> {
  const page = await store.kv.list({ prefix: '' });
  return JSON.stringify(await Promise.all(page.keys.map(async (k) => [k.name, await store.kv.get(k.name, 'text')])));
}

async function refusedAs(path: string, message: RegExp): Promise<void> {
  const before = await storedState();
  const attempt = publishRelease({ paths: [path], namespace: 'acme', config, store, keyFile });
  await expect(attempt).rejects.toMatchObject({ status: 409, message: expect.stringMatching(/already published with different contents/) });
  // The wording names the differing file: what the publisher reads to find the mistake.
  await expect(attempt).rejects.toThrow(message);
  expect(await storedState()).toBe(before);
}

describe('republishing a version', () => {
  it('refuses a rebuild with the same file names and sizes but other bytes', async () => {
    const original = join(dir, 'original');
    const rebuilt = await dist('rebuilt', 'bbbb');
    // The precondition that makes this test mean something: only the bytes differ.
    expect(zips(rebuilt)).toEqual(zips(original));
    for (const name of zips(original)) {
      expect(statSync(join(rebuilt, name)).size, name).toBe(statSync(join(original, name)).size);
      expect(readFileSync(join(rebuilt, name)).equals(readFileSync(join(original, name))), name).toBe(false);
    }
    await refusedAs(
      rebuilt,
      /already published with different contents \(terraform-provider-same_1\.0\.0_linux_amd64\.zip has SHA-256 [0-9a-f]{64}, published [0-9a-f]{64}\); published versions are immutable/,
    );
  });

  it('refuses a rebuild with other bytes in a --dry-run too, instead of planning to "verify" it', async () => {
    const before = await storedState();
    const lines: string[] = [];
    const attempt = publishRelease({
      paths: [await dist('rebuilt-dry', 'cccc')],
      namespace: 'acme',
      config,
      store,
      keyFile,
      dryRun: true,
      log: (line) => lines.push(line),
    });
    await expect(attempt).rejects.toMatchObject({ status: 409, message: expect.stringMatching(/already published with different contents/) });
    await expect(attempt).rejects.toThrow(/terraform-provider-same_1\.0\.0_linux_amd64\.zip has SHA-256/);
    expect(lines.join('\n')).not.toMatch(/already published with these bytes/);
    expect(await storedState()).toBe(before);
  });

  it('refuses the same zips with other protocols', async () => {
    await refusedAs(await dist('protocols', 'aaaa', { protocols: ['5.0'] }), /protocols \["6\.0"\] → \["5\.0"\]/);
  });

  it('refuses the same zips with a platform more or a platform less', async () => {
    await refusedAs(await dist('more', 'aaaa', { platforms: ['linux_amd64', 'windows_amd64', 'darwin_arm64'] }), /darwin_arm64\.zip is new/);
    await refusedAs(await dist('less', 'aaaa', { platforms: ['linux_amd64'] }), /windows_amd64\.zip is missing/);
  });

  it('accepts identical bytes as unchanged', async () => {
    const again = await publishRelease({ paths: [await dist('again', 'aaaa')], namespace: 'acme', config, store, keyFile });
    expect(again.status).toBe('unchanged');
  });
});
