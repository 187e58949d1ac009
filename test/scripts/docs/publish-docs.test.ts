import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig, type RegistryConfig } from '../../../scripts/lib/config';
import { openLocalStore } from '../../../scripts/lib/stores/local';
import { type StoreHandle } from '../../../scripts/lib/stores/handle';
import { publishRelease } from '../../../scripts/lib/provider/publish';
import { providerAddress } from '../../../src/protocol/address';
import { InputError } from '../../../src/protocol/errors';
import { catalogKey, docsKey, providerPageKey } from '../../../src/store/layout';
import type { ProviderPageData } from '../../../src/store/pages/read';
import { configPath, runScript, tempDir, writeDist, writeKeyFile } from '../helpers';

// publish-provider --docs against a local state: validated before any write, stored per version, immutable.
const { dir, cleanup } = tempDir('docs');
let config: RegistryConfig;
let store: StoreHandle;
let key: { path: string };
const address = () => providerAddress(config.hostname, 'acme', 'x');
const spec = (
  description: string,
  resources: object[] = [{ name: 'thing', schema: { attributes: [{ name: 'id', string: { computed_optional_required: 'computed' } }] } }],
) => {
  const file = join(dir, `spec-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ version: '0.1', provider: { name: 'x', description }, resources }));
  return file;
};
const publish = async (version: string, docs?: string, dryRun = false) =>
  publishRelease({
    paths: [await writeDist(join(dir, `dist-${version}-${Math.random()}`), 'x', version, { platforms: ['linux_amd64'] })],
    namespace: 'acme',
    config,
    store,
    keyFile: key.path,
    keysDir: join(dir, 'keys'),
    docs,
    dryRun,
  });

async function snapshot(): Promise<string> {
  const page = await store.kv.list({ prefix: '' });
  return JSON.stringify(await Promise.all(page.keys.map(async (k) => [k.name, await store.kv.get(k.name, 'text')])));
}

beforeAll(async () => {
  config = await readRegistryConfig({ configPath, persistTo: join(dir, 'state') });
  store = await openLocalStore(config);
  key = await writeKeyFile(dir);
});
afterAll(async () => {
  await store?.close();
  cleanup();
});

describe('publish-provider --docs', () => {
  it('refuses invalid docs before writing anything', async () => {
    const before = await snapshot();
    const attempt = publish('1.0.0', spec('x', [{ name: 'Bad', schema: { attributes: [] } }]));
    await expect(attempt).rejects.toBeInstanceOf(InputError);
    await expect(attempt).rejects.toThrow('$.resources[0].name: "Bad" is not a lower-case Terraform identifier');
    expect(await snapshot()).toBe(before);
  });

  it('stores the docs with the version and materialises the pages (catalogue, provider page data)', async () => {
    expect((await publish('1.0.0', spec('first'))).status).toBe('published');
    expect(JSON.parse((await store.kv.get(docsKey(address(), '1.0.0'), 'text'))!).resources[0].name).toBe('x_thing');
    const page = JSON.parse((await store.kv.get(providerPageKey(address()), 'text'))!) as ProviderPageData;
    expect(page.versions[0]).toMatchObject({ version: '1.0.0', docs: true });
    expect(page.description).toBe('first');
    expect(JSON.parse((await store.kv.get(catalogKey, 'text'))!).providers).toEqual([
      expect.objectContaining({ namespace: 'acme', type: 'x', latest: '1.0.0', description: 'first' }),
    ]);
  });

  it('keeps docs immutable: the same docs again is a no-op, different docs are refused', async () => {
    const file = spec('first');
    expect((await publish('1.0.0', file)).status).toBe('unchanged');
    const before = await snapshot();
    // The Worker refuses (409), with the store's own message.
    const refused = { status: 409, message: expect.stringMatching(/different/) };
    await expect(publish('1.0.0', spec('changed'))).rejects.toMatchObject(refused);
    await expect(publish('1.0.0', spec('changed'), true)).rejects.toMatchObject(refused);
    expect(await snapshot()).toBe(before);
  });

  it('publishes without docs, and adds docs to such a version later (not in a dry run)', async () => {
    await publish('1.1.0');
    let page = JSON.parse((await store.kv.get(providerPageKey(address()), 'text'))!) as ProviderPageData;
    expect(page.versions[0]).toMatchObject({ version: '1.1.0', docs: false });
    const before = await snapshot();
    await publish('1.1.0', spec('second'), true);
    expect(await snapshot()).toBe(before);
    await publish('1.1.0', spec('second'));
    page = JSON.parse((await store.kv.get(providerPageKey(address()), 'text'))!) as ProviderPageData;
    expect(page.versions[0]).toMatchObject({ version: '1.1.0', docs: true });
    expect(page.description).toBe('second');
  });

  it('--docs with --registry: invalid docs are refused before anything is sent (exit 1)', async () => {
    const dist = await writeDist(join(dir, 'dist-registry'), 'x', '3.0.0', { platforms: ['linux_amd64'] });
    const file = join(dir, 'broken-registry.json');
    writeFileSync(file, JSON.stringify({ version: '9', provider: { name: 'x' } }));
    // Port 9 (discard) on loopback: nothing answers, so any request would fail differently.
    const result = await runScript('publish-provider', [dist, '--namespace', 'acme', '--registry', 'http://127.0.0.1:9', '--docs', file], {
      EDGE_REGISTRY_TOKEN: 'ert_not-used',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`docs ${file}: 1 problem; nothing was published`);
    expect(result.stderr).not.toMatch(/ECONNREFUSED|fetch failed|publishing to/);
  });

  it('the CLI names the file and the JSON path, exits 1', async () => {
    const file = join(dir, 'broken.json');
    writeFileSync(file, JSON.stringify({ version: '9', provider: { name: 'x' } }));
    const dist = await writeDist(join(dir, 'dist-cli'), 'x', '2.0.0', { platforms: ['linux_amd64'] });
    const result = await runScript('publish-provider', [
      dist,
      '--namespace',
      'acme',
      '--key-file',
      key.path,
      '--persist-to',
      join(dir, 'state'),
      '--docs',
      file,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`docs ${file}: 1 problem; nothing was published`);
    expect(result.stderr).toContain('$.version: spec version "9" is not supported');
  });
});
