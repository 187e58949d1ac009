import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as openpgp from 'openpgp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectArchive } from '../../scripts/lib/archive';
import { readRegistryConfig } from '../../scripts/lib/config';
import { openLocalStore, type StoreHandle } from '../../scripts/lib/local-store';
import { publishRelease, type PublishResult } from '../../scripts/lib/publish';
import { signDetached } from '../../scripts/lib/sign';
import type { BlobStore, KvStore } from '../../src/store/types';
import { formatShasums } from '../../src/protocol/hashes';
import { configPath, runScript, sleep, startWranglerDev, tempDir, writeDist, type WranglerDev } from './helpers';

/**
 * End to end: publish with the CLI into a temp local state while
 * `wrangler dev` serves that state, then install-verify as Terraform does:
 * download document → archive SHA-256 == shasum == its SHA256SUMS line →
 * `gpg --verify` with the served ascii_armor (real GnuPG) → `sha256sum -c`.
 * Then re-runs, immutability, concurrent publishers, interrupted publishes,
 * key rotation, supplied signatures and --binary.
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

async function getJson(path: string): Promise<{ status: number; url: string; body: any }> {
  const url = new URL(path, server.origin).href;
  const response = await fetch(url);
  return { status: response.status, url, body: response.status === 200 ? await response.json() : await response.text() };
}

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status, url).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Served version numbers of acme/TYPE ([] when the provider is not found). */
async function servedVersions(type: string): Promise<string[]> {
  const { status, body } = await getJson(`/v1/providers/acme/${type}/versions`);
  return status === 200 ? (body.versions as { version: string }[]).map((v) => v.version) : [];
}

/** Waits (polling) until the served version list satisfies `check`; returns the seconds it took. */
async function waitForVersions(type: string, check: (versions: string[]) => boolean, timeoutMs = 8000): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (check(await servedVersions(type))) return (Date.now() - start) / 1000;
    if (Date.now() - start > timeoutMs) throw new Error(`served versions of ${type} still ${JSON.stringify(await servedVersions(type))}`);
    await sleep(100);
  }
}

/**
 * Verifies one platform the way Terraform's installer does, with real tools;
 * returns the archive bytes. `downloads` collects files for sha256sum -c.
 */
async function verifyLikeTerraform(type: string, version: string, platform: string, downloads: string): Promise<{ doc: any; archive: Buffer }> {
  const [os, arch] = platform.split('_');
  const { status, url, body: doc } = await getJson(`/v1/providers/acme/${type}/${version}/download/${os}/${arch}`);
  expect(status).toBe(200);
  expect([doc.os, doc.arch]).toEqual([os, arch]);
  expect(doc.shasum).toMatch(/^[0-9a-f]{64}$/);
  const archive = await download(new URL(doc.download_url, url).href);
  const sums = await download(new URL(doc.shasums_url, url).href);
  const signature = await download(new URL(doc.shasums_signature_url, url).href);
  expect(sha256(archive)).toBe(doc.shasum);
  const line = sums.toString('utf8').split('\n').find((l) => l.endsWith(`  ${doc.filename}`));
  expect(line, `SHA256SUMS line for ${doc.filename}`).toBe(`${doc.shasum}  ${doc.filename}`);

  // gpg --verify with the served key, in a throwaway GNUPGHOME.
  const home = join(downloads, `gnupg-${platform}`);
  mkdirSync(home, { recursive: true });
  chmodSync(home, 0o700);
  const keys = doc.signing_keys.gpg_public_keys as { key_id: string; ascii_armor: string }[];
  expect(keys.length).toBeGreaterThan(0);
  writeFileSync(join(home, 'key.asc'), keys.map((k) => k.ascii_armor).join('\n'));
  writeFileSync(join(downloads, doc.filename), archive);
  writeFileSync(join(downloads, 'SHA256SUMS'), sums);
  writeFileSync(join(downloads, 'SHA256SUMS.sig'), signature);
  try {
    execFileSync('gpg', ['--batch', '--homedir', home, '--import', join(home, 'key.asc')], { stdio: 'pipe' });
    const verify = spawnSync('gpg', ['--batch', '--homedir', home, '--status-fd', '1', '--verify', join(downloads, 'SHA256SUMS.sig'), join(downloads, 'SHA256SUMS')], { encoding: 'utf8' });
    expect(verify.status, verify.stderr).toBe(0);
    const validsig = /\[GNUPG:\] VALIDSIG ([0-9A-F]{40})/.exec(verify.stdout);
    expect(validsig, verify.stdout).not.toBeNull();
    expect(keys.map((k) => k.key_id)).toContain(validsig![1]!.slice(-16));
  } finally {
    spawnSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
  }
  return { doc, archive };
}

/** Every KV key and value, and the R2 objects' etags, of the state (read through a second Miniflare). */
async function snapshot(store: StoreHandle): Promise<string> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.kv.list({ prefix: '', ...(cursor ? { cursor } : {}) });
    for (const { name } of page.keys) out.push(`${name}=${await store.kv.get(name, 'text')}`);
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  return out.join('\n');
}

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
    const dist = await writeDist(join(dir, 'widget-1.0.0'), 'widget', '1.0.0', { platforms: ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'], protocols: ['6.0'] });
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
        kv: { ...bind(store.kv), put: async (key: string, value: string) => { writes.push(key); return store.kv.put(key, value); } },
        blobs: {
          head: (key: string) => store.blobs.head(key),
          get: (key: string) => store.blobs.get(key),
          list: (options) => store.blobs.list(options),
          delete: async (key: string) => { writes.push(`delete ${key}`); return store.blobs.delete(key); },
          put: async (key, value, options) => { writes.push(key); return store.blobs.put(key, value, options); },
        } satisfies BlobStore,
      };
      const again = await publishRelease({ paths: [join(dir, 'widget-1.0.0')], namespace: 'acme', config, store: counting, keyFile });
      expect(again.status).toBe('unchanged');
      // Only the provider's lease is written (taken, released); the release is verified, not rewritten.
      expect(writes.filter((key) => !key.startsWith('.leases/'))).toEqual([]);
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
    const rebuilt = await writeDist(join(dir, 'widget-1.0.0-rebuilt'), 'widget', '1.0.0', { platforms: ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'], protocols: ['6.0'], salt: 'rebuilt' });
    const result = await publish([rebuilt]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/error: .*acme\/widget 1\.0\.0 is already published with different contents \(terraform-provider-widget_1\.0\.0_darwin_arm64\.zip has SHA-256 [0-9a-f]{64}, published [0-9a-f]{64}\); published versions are immutable/);
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

  it('a publish stopped before its record, or before the lists, leaves the old state served; a re-run completes it', async () => {
    const dist = await writeDist(join(dir, 'widget-2.0.0'), 'widget', '2.0.0', { platforms: ['linux_amd64', 'windows_amd64'] });
    const listed = await servedVersions('widget');

    const stopped = await publish([dist], { EDGE_REGISTRY_TEST_CRASH_BEFORE: 'record' });
    expect(stopped.code, stopped.stderr).toBe(70);
    expect(stopped.stderr).toMatch(/uploading terraform-provider-widget_2\.0\.0_linux_amd64\.zip/);
    await sleep(CACHE_SECONDS * 1000 + 200); // longer than INDEX_CACHE_SECONDS: whatever is served now comes from KV
    expect(await servedVersions('widget')).toEqual(listed);
    expect((await getJson(`/v1/mirror/${hostname}/acme/widget/index.json`)).body.versions['2.0.0']).toBeUndefined();

    const stoppedLater = await publish([dist], { EDGE_REGISTRY_TEST_CRASH_BEFORE: 'index' });
    expect(stoppedLater.code, stoppedLater.stderr).toBe(70);
    expect(stoppedLater.stderr).toMatch(/already stored: terraform-provider-widget_2\.0\.0_linux_amd64\.zip/);
    await sleep(CACHE_SECONDS * 1000 + 200);
    expect(await servedVersions('widget')).toEqual(listed);

    const completed = await publish([dist]);
    expect(completed.code, completed.stderr).toBe(0);
    expect(JSON.parse(completed.stdout).status).toBe('unchanged');
    await waitForVersions('widget', (v) => v.includes('2.0.0'));
    const downloads = join(dir, 'downloads-2.0.0');
    mkdirSync(downloads, { recursive: true });
    await verifyLikeTerraform('widget', '2.0.0', 'linux_amd64', downloads);
  });

  it('a publish killed (SIGKILL) while uploading leaves the old state served; a re-run completes it', async () => {
    const dist = join(dir, 'widget-2.1.0');
    await writeDist(dist, 'widget', '2.1.0', { platforms: ['linux_amd64'] });
    // A large, incompressible second platform so the kill lands mid-upload.
    const { zipBuffers } = await import('../../scripts/lib/zip-binary');
    writeFileSync(join(dist, 'terraform-provider-widget_2.1.0_windows_amd64.zip'), await zipBuffers({ 'terraform-provider-widget_v2.1.0.exe': randomBytes(8 * 1024 * 1024) }, { compress: false }));
    const listed = await servedVersions('widget');

    const child = spawn(join(process.cwd(), 'node_modules', '.bin', 'tsx'), ['scripts/publish-provider.ts', dist, '--namespace', 'acme', '--persist-to', state, '--key-file', keyFile], { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve) => child.stderr!.on('data', (d) => {
      stderr += d;
      if (stderr.includes('uploading')) resolve();
    }));
    process.kill(-child.pid!, 'SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(stderr).not.toMatch(/published registry/);

    await sleep(CACHE_SECONDS * 1000 + 200);
    expect(await servedVersions('widget')).toEqual(listed);
    const completed = await publish([dist]);
    expect(completed.code, completed.stderr).toBe(0);
    expect(JSON.parse(completed.stdout).status).toBe('published');
    await waitForVersions('widget', (v) => v.includes('2.1.0'));
    const downloads = join(dir, 'downloads-2.1.0');
    mkdirSync(downloads, { recursive: true });
    await verifyLikeTerraform('widget', '2.1.0', 'windows_amd64', downloads);
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

  it('publishes a supplied SHA256SUMS and signature byte for byte after verifying them', async () => {
    const dist = await writeDist(join(dir, 'widget-3.0.0'), 'widget', '3.0.0', { platforms: ['linux_amd64', 'darwin_arm64'] });
    const entries = [];
    for (const name of ['terraform-provider-widget_3.0.0_linux_amd64.zip', 'terraform-provider-widget_3.0.0_darwin_arm64.zip', 'terraform-provider-widget_3.0.0_manifest.json']) {
      entries.push({ filename: name, sha256Hex: sha256(readFileSync(join(dist, name))) });
    }
    const sums = new TextEncoder().encode(formatShasums(entries)); // goreleaser also lists the manifest
    const privateKey = await openpgp.readPrivateKey({ armoredKey: readFileSync(keyFile, 'utf8') });
    const signature = await signDetached(sums, privateKey);
    writeFileSync(join(dist, 'terraform-provider-widget_3.0.0_SHA256SUMS'), sums);
    writeFileSync(join(dist, 'terraform-provider-widget_3.0.0_SHA256SUMS.sig'), signature);

    const result = await runScript('publish-provider', [dist, '--namespace', 'acme', '--persist-to', state, '--json'], { EDGE_REGISTRY_SIGNING_KEY: '' });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/signature verified with key [0-9A-F]{16}; publishing it as is/);
    const { url, body: doc } = await getJson('/v1/providers/acme/widget/3.0.0/download/linux/amd64');
    expect(Buffer.compare(await download(new URL(doc.shasums_url, url).href), Buffer.from(sums))).toBe(0);
    expect(Buffer.compare(await download(new URL(doc.shasums_signature_url, url).href), Buffer.from(signature))).toBe(0);
    const downloads = join(dir, 'downloads-3.0.0');
    mkdirSync(downloads, { recursive: true });
    await verifyLikeTerraform('widget', '3.0.0', 'darwin_arm64', downloads);
  });

  it('--binary zips raw executables as goreleaser does, reproducibly', async () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'terraform-provider-gadget_v0.1.0'), '#!/bin/sh\necho gadget\n');
    writeFileSync(join(bin, 'gadget.exe'), 'MZ fake windows binary');
    const args = [`--binary`, `linux_amd64=${join(bin, 'terraform-provider-gadget_v0.1.0')}`, '--binary', `windows_amd64=${join(bin, 'gadget.exe')}`];
    const result = await publish([...args, '--type', 'gadget', '--version', '0.1.0']);
    expect(result.code, result.stderr).toBe(0);
    const published = JSON.parse(result.stdout) as PublishResult;
    expect(published.protocols).toEqual(['5.0']);
    expect(result.stderr).toMatch(/no terraform-provider-TYPE_VERSION_manifest\.json: serving protocols \["5\.0"\]/);

    const downloads = join(dir, 'downloads-gadget');
    mkdirSync(downloads, { recursive: true });
    for (const platform of ['linux_amd64', 'windows_amd64']) {
      const { doc } = await verifyLikeTerraform('gadget', '0.1.0', platform, downloads);
      const inspected = await inspectArchive(join(downloads, doc.filename));
      const names = inspected.entries.map((e) => e.name);
      expect(names).toEqual([platform.startsWith('windows') ? 'terraform-provider-gadget_v0.1.0.exe' : 'terraform-provider-gadget_v0.1.0']);
      expect(inspected.entries[0]!.unixMode).toBe(0o755);
    }
    const again = await publish([...args, '--type', 'gadget', '--version', '0.1.0']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).status).toBe('unchanged');
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
