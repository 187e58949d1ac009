import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../scripts/lib/config';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { type StoreHandle } from '../../scripts/lib/stores/handle';
import { inspectArchive } from '../../scripts/lib/provider/archive';
import { publishRelease, type PublishResult } from '../../scripts/lib/provider/publish';
import type { BlobStore, KvStore } from '../../src/store/store';
import { configPath, runScript, sleep, startWranglerDev, tempDir, writeDist, type WranglerDev } from './helpers';
import { servedRegistry, snapshot } from './served';

/**
 * End to end: publish with the CLI into a temp local state while
 * `wrangler dev` serves that state, then install-verify as Terraform does:
 * download document → archive SHA-256 == shasum == its SHA256SUMS line →
 * `gpg --verify` with the served ascii_armor (real GnuPG) → `sha256sum -c`.
 * Then re-runs, immutability, concurrent publishers, --dry-run and key
 * rotation (interrupted publishes, supplied signatures and --binary are in
 * publish-e2e-recovery.test.ts, which runs beside this file).
 */

const { dir, cleanup } = tempDir('e2e');
const state = join(dir, 'state');
const keyFile = join(dir, 'acme-signing.asc');
let server: WranglerDev;
// The first test runs on `wrangler dev` as configured (INDEX_CACHE_SECONDS 5) and proves the README's "listed
// within 5 s"; the others on a restarted one with a 1 s lifetime, so they wait 1 s, not 5, for cached lists to expire.
const CACHE_SECONDS = 1;
let first: PublishResult;
let hostname: string;

const publish = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runScript('publish-provider', [...args, '--namespace', 'acme', '--persist-to', state, '--key-file', keyFile, '--json'], env);

const { getJson, servedVersions, waitForVersions, verifyLikeTerraform } = servedRegistry(() => server.origin);

beforeAll(async () => {
  hostname = (await readRegistryConfig({ configPath })).hostname;
  const generated = await runScript('keys', ['generate', '--namespace', 'acme', '--key-file', keyFile, '--persist-to', state, '--json']);
  expect(generated.code, generated.stderr).toBe(0);
  expect(generated.stderr).not.toMatch(/BEGIN PGP PRIVATE/);
  server = await startWranglerDev(state);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  cleanup();
});

describe('publish-provider end to end, served by wrangler dev as configured', () => {
  it('publishes a multi-platform release that a running wrangler dev serves within 5 s and that verifies as Terraform checks it', async () => {
    const dist = await writeDist(join(dir, 'widget-1.0.0'), 'widget', '1.0.0', {
      platforms: ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'],
      protocols: ['6.0'],
    });
    // Keep asking while the publish runs, so the Worker's isolate always holds a fresh "not found" (cached for
    // INDEX_CACHE_SECONDS). Once the lists are written (before the process releases its lease and exits) the
    // version may show up, but only whole: never anything else.
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const served = await servedVersions('widget');
        if (served.length > 0) {
          expect(served).toEqual(['1.0.0']);
          break;
        }
        await sleep(200);
      }
    })();
    const result = await publish([dist]);
    polling = false;
    await poller;
    expect(result.code, result.stderr).toBe(0);
    first = JSON.parse(result.stdout) as PublishResult;
    expect(first).toMatchObject({ address: `${hostname}/acme/widget`, version: '1.0.0', protocols: ['6.0'], status: 'published' });
    expect(first.key_id).toMatch(/^[0-9A-F]{16}$/);
    expect(first.platforms.map((p) => `${p.os}_${p.arch}`).sort()).toEqual(['darwin_arm64', 'linux_amd64', 'linux_arm64', 'windows_amd64']);
    expect(result.stdout.trim().split('\n')).toHaveLength(1);

    const seconds = await waitForVersions('widget', (v) => v.includes('1.0.0'));
    expect(seconds).toBeLessThanOrEqual(5.5);
    console.log(`wrangler dev listed the new version ${seconds.toFixed(1)} s after the publish finished`);

    const versions = await getJson('/v1/providers/acme/widget/versions');
    expect(versions.body.versions[0].protocols).toEqual(['6.0']);

    const downloads = join(dir, 'downloads-1.0.0');
    mkdirSync(downloads, { recursive: true });
    for (const platform of first.platforms) {
      const { doc, archive } = await verifyLikeTerraform('widget', '1.0.0', `${platform.os}_${platform.arch}`, downloads);
      expect(doc.shasum).toBe(platform.shasum);
      expect(archive.byteLength).toBe(platform.size);
      expect(doc.signing_keys.gpg_public_keys[0].key_id).toBe(first.key_id);
      expect(doc.packages[`${platform.os}_${platform.arch}`].hashes).toEqual([`zh:${platform.shasum}`, platform.h1]);
      const inspected = await inspectArchive(join(downloads, platform.filename));
      expect(inspected.h1).toBe(platform.h1);
    }
    const check = spawnSync('sha256sum', ['-c', '--strict', 'SHA256SUMS'], { cwd: downloads, encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(check.stdout.trim().split('\n')).toHaveLength(4);

    const mirror = await getJson(`/v1/mirror/${hostname}/acme/widget/1.0.0.json`);
    expect(mirror.status).toBe(200);
    expect(mirror.body.archives.linux_amd64.hashes).toContain(first.platforms.find((p) => p.os === 'linux' && p.arch === 'amd64')!.h1);
  });
});

describe(`publish-provider end to end, served by wrangler dev with INDEX_CACHE_SECONDS = ${CACHE_SECONDS}`, () => {
  beforeAll(async () => {
    await server.stop(); // one server at a time: two on one state contend for its SQLite files
    server = await startWranglerDev(state, { INDEX_CACHE_SECONDS: String(CACHE_SECONDS) });
  }, 120_000);

  it('a re-run of the same release succeeds and rewrites nothing', async () => {
    const cli = await publish([join(dir, 'widget-1.0.0')]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual({ ...first, status: 'unchanged' });
    expect(cli.stderr).toMatch(/already published with these bytes; verified, nothing to write/);
    expect(cli.stderr).not.toMatch(/uploading/);

    // In-process, counting every write on the real local store.
    const config = await readRegistryConfig({ configPath, persistTo: state });
    const store = await openLocalStore(config);
    try {
      const before = await snapshot(store);
      const writes: string[] = [];
      const counting: StoreHandle = {
        ...store,
        kv: {
          ...bind(store.kv),
          put: async (key: string, value: string) => {
            writes.push(key);
            return store.kv.put(key, value);
          },
        },
        blobs: {
          head: (key: string) => store.blobs.head(key),
          get: (key: string) => store.blobs.get(key),
          list: (options) => store.blobs.list(options),
          delete: async (key: string) => {
            writes.push(`delete ${key}`);
            return store.blobs.delete(key);
          },
          put: async (key, value, options) => {
            writes.push(key);
            return store.blobs.put(key, value, options);
          },
        } satisfies BlobStore,
      };
      const again = await publishRelease({ paths: [join(dir, 'widget-1.0.0')], namespace: 'acme', config, store: counting, keyFile });
      expect(again.status).toBe('unchanged');
      // Only the provider's lease (taken, released) and the audit entry are written; the release is verified, not rewritten.
      expect(writes.filter((key) => !key.startsWith('.leases/') && !key.startsWith('.audit/'))).toEqual([]);
      expect(await snapshot(store)).toBe(before);
    } finally {
      await store.close();
    }
  });

  it('refuses the same version with different bytes (exit 1), changing nothing', async () => {
    const config = await readRegistryConfig({ configPath, persistTo: state });
    const store = await openLocalStore(config);
    const before = await snapshot(store);
    await store.close();
    const rebuilt = await writeDist(join(dir, 'widget-1.0.0-rebuilt'), 'widget', '1.0.0', {
      platforms: ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'],
      protocols: ['6.0'],
      salt: 'rebuilt',
    });
    const result = await publish([rebuilt]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /error: .*acme\/widget 1\.0\.0 is already published with different contents \(terraform-provider-widget_1\.0\.0_darwin_arm64\.zip has SHA-256 [0-9a-f]{64}, published [0-9a-f]{64}\); published versions are immutable/,
    );
    const after = await openLocalStore(config);
    expect(await snapshot(after)).toBe(before);
    await after.close();
    const doc = await getJson('/v1/providers/acme/widget/1.0.0/download/linux/amd64');
    expect(doc.body.shasum).toBe(first.platforms.find((p) => p.os === 'linux' && p.arch === 'amd64')!.shasum);
  });

  it('concurrent publishes of different versions in separate processes all end up listed', async () => {
    const versions = ['1.1.0', '1.2.0', '1.3.0'];
    const dists = await Promise.all(versions.map((v) => writeDist(join(dir, `widget-${v}`), 'widget', v, { platforms: ['linux_amd64', 'darwin_arm64'] })));
    const results = await Promise.all(dists.map((d) => publish([d])));
    for (const result of results) expect(result.code, result.stderr).toBe(0);

    const config = await readRegistryConfig({ configPath, persistTo: state });
    const store = await openLocalStore(config);
    try {
      const stored = JSON.parse((await store.kv.get(`v1/providers/${hostname}/acme/widget/versions`, 'text'))!);
      expect(stored.versions.map((v: { version: string }) => v.version)).toEqual(['1.0.0', ...versions]);
      const mirror = JSON.parse((await store.kv.get(`v1/mirror/${hostname}/acme/widget/index.json`, 'text'))!);
      expect(Object.keys(mirror.versions)).toEqual(['1.0.0', ...versions]);
    } finally {
      await store.close();
    }
    await waitForVersions('widget', (v) => versions.every((x) => v.includes(x)));
  });

  it('--dry-run validates and prints the plan, writing nothing', async () => {
    const dist = await writeDist(join(dir, 'widget-2.2.0'), 'widget', '2.2.0', { platforms: ['linux_amd64'] });
    const config = await readRegistryConfig({ configPath, persistTo: state });
    const store = await openLocalStore(config);
    const before = await snapshot(store);
    const result = await publish([dist, '--dry-run']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ version: '2.2.0', status: 'dry-run', key_id: first.key_id });
    expect(result.stderr).toMatch(/dry run: would publish .*acme\/widget 2\.2\.0/);
    expect(await snapshot(store)).toBe(before);
    await store.close();
  });

  it('a rotated-out key stays served for the versions it signed; new versions use the new key', async () => {
    const newKeyFile = join(dir, 'acme-signing-2.asc');
    const generated = await runScript('keys', ['generate', '--namespace', 'acme', '--type', 'ecc', '--key-file', newKeyFile, '--persist-to', state, '--json']);
    expect(generated.code, generated.stderr).toBe(0);
    const newKeyId = JSON.parse(generated.stdout).key_id as string;
    const removed = await runScript('keys', ['remove', '--namespace', 'acme', '--key-id', first.key_id.toLowerCase(), '--persist-to', state]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stderr).toMatch(/still served for the versions it signed: .*widget 1\.0\.0/);

    const dist = await writeDist(join(dir, 'widget-4.0.0'), 'widget', '4.0.0', { platforms: ['linux_amd64'] });
    const stale = await publish([dist]); // signed with the removed key: refused
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(new RegExp(`key ${first.key_id} is not a signing key of namespace acme \\(it has ${newKeyId}\\); register it first`));
    const result = await runScript('publish-provider', [dist, '--namespace', 'acme', '--persist-to', state, '--key-file', newKeyFile, '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).key_id).toBe(newKeyId);
    mkdirSync(join(dir, 'downloads-rotation-new'), { recursive: true });
    const newDoc = await verifyLikeTerraform('widget', '4.0.0', 'linux_amd64', join(dir, 'downloads-rotation-new'));
    expect(newDoc.doc.signing_keys.gpg_public_keys.map((k: { key_id: string }) => k.key_id)).toEqual([newKeyId]);

    const downloads = join(dir, 'downloads-rotation');
    mkdirSync(downloads, { recursive: true });
    const oldDoc = await verifyLikeTerraform('widget', '1.0.0', 'linux_amd64', downloads);
    expect(oldDoc.doc.signing_keys.gpg_public_keys.map((k: { key_id: string }) => k.key_id)).toEqual([first.key_id]);

    const list = await runScript('keys', ['list', '--namespace', 'acme', '--persist-to', state, '--json']);
    expect(list.code, list.stderr).toBe(0);
    const keys = JSON.parse(list.stdout).keys as { key_id: string; status: string; signed: string[] }[];
    expect(keys.find((k) => k.key_id === newKeyId)?.status).toBe('registered');
    expect(keys.find((k) => k.key_id === first.key_id)).toMatchObject({ status: 'retired' });
    expect(keys.find((k) => k.key_id === first.key_id)!.signed).toContain('widget 1.0.0');
  });
});

function bind(kv: KvStore): KvStore {
  return { get: kv.get.bind(kv), put: kv.put.bind(kv), delete: kv.delete.bind(kv), list: kv.list.bind(kv) };
}
