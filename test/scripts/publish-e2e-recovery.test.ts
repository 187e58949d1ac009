import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as openpgp from 'openpgp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectArchive } from '../../scripts/lib/provider/archive';
import { readRegistryConfig } from '../../scripts/lib/config';
import { publishRelease, type PublishResult } from '../../scripts/lib/provider/publish';
import { signDetached } from '../../scripts/lib/provider/sign';
import { formatShasums } from '../../src/protocol/hashes';
import { releaseObjectKey } from '../../src/store/layout';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { configPath, killableEnv, runScript, sleep, startWranglerDev, tempDir, writeDist, type WranglerDev } from './helpers';
import { servedRegistry, sha256 } from './served';

/**
 * End to end, the publishes that go wrong or come in other forms (publish-e2e.test.ts has the first publish,
 * re-runs, immutability, concurrency and key rotation; the two files run side by side): a publish stopped
 * before its record or its lists, one killed mid-upload, a supplied SHA256SUMS and signature, and --binary —
 * each served by a running `wrangler dev` (lists cached 1 s) and verified as Terraform verifies.
 */

const { dir, cleanup } = tempDir('e2e-recovery');
const state = join(dir, 'state');
const keyFile = join(dir, 'acme-signing.asc');
const CACHE_SECONDS = 1;
let server: WranglerDev;
let hostname: string;

const publish = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runScript('publish-provider', [...args, '--namespace', 'acme', '--persist-to', state, '--key-file', keyFile, '--json'], env);

const { getJson, download, servedVersions, waitForVersions, verifyLikeTerraform } = servedRegistry(() => server.origin);

beforeAll(async () => {
  hostname = (await readRegistryConfig({ configPath })).hostname;
  const generated = await runScript('keys', ['generate', '--namespace', 'acme', '--type', 'ecc', '--key-file', keyFile, '--persist-to', state, '--json']);
  expect(generated.code, generated.stderr).toBe(0);
  // An older release already served, so "the old state" below is a real one, not an empty registry.
  const config = await readRegistryConfig({ configPath, persistTo: state });
  const base = await writeDist(join(dir, 'widget-1.0.0'), 'widget', '1.0.0', { platforms: ['linux_amd64'] });
  expect((await publishRelease({ paths: [base], namespace: 'acme', config, keyFile, log: () => undefined, processEnv: {} })).status).toBe('published');
  server = await startWranglerDev(state, { INDEX_CACHE_SECONDS: String(CACHE_SECONDS) });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  cleanup();
});

describe(`publish-provider interrupted, supplied and --binary, served by wrangler dev with INDEX_CACHE_SECONDS = ${CACHE_SECONDS}`, () => {
  it('a publish stopped before its record, or before the lists, leaves the old state served; a re-run completes it', async () => {
    const dist = await writeDist(join(dir, 'widget-2.0.0'), 'widget', '2.0.0', { platforms: ['linux_amd64', 'windows_amd64'] });
    const listed = await servedVersions('widget');
    expect(listed).toEqual(['1.0.0']);

    const stopped = await publish([dist], { EDGE_REGISTRY_TEST_CRASH_BEFORE: 'record' });
    expect(stopped.code, stopped.stderr).toBe(70);
    expect(stopped.stderr).toMatch(/uploading terraform-provider-widget_2\.0\.0_linux_amd64\.zip/);
    await sleep(CACHE_SECONDS * 1000 + 200); // longer than INDEX_CACHE_SECONDS: whatever is served now comes from KV
    expect(await servedVersions('widget')).toEqual(listed);
    expect((await getJson(`/v1/mirror/${hostname}/acme/widget/index.json`)).body.versions['2.0.0']).toBeUndefined();

    // Stopped again, once the commit is on its way: the local runtime (and the Worker's commit) goes with the CLI.
    const stoppedLater = await publish([dist], { EDGE_REGISTRY_TEST_CRASH_BEFORE: 'commit-sent' });
    expect(stoppedLater.code, stoppedLater.stderr).toBe(70);
    expect(stoppedLater.stderr).toMatch(/uploading terraform-provider-widget_2\.0\.0_linux_amd64\.zip/);
    await sleep(CACHE_SECONDS * 1000 + 200);
    expect([listed, [...listed, '2.0.0']]).toContainEqual(await servedVersions('widget'));

    const completed = await publish([dist]);
    expect(completed.code, completed.stderr).toBe(0);
    expect(['published', 'unchanged', 'repaired']).toContain(JSON.parse(completed.stdout).status);
    await waitForVersions('widget', (v) => v.includes('2.0.0'));
    const downloads = join(dir, 'downloads-2.0.0');
    mkdirSync(downloads, { recursive: true });
    await verifyLikeTerraform('widget', '2.0.0', 'linux_amd64', downloads);
  });

  it('a publish killed (SIGKILL) while uploading leaves the old state served; a re-run completes it', async () => {
    const dist = join(dir, 'widget-2.1.0');
    await writeDist(dist, 'widget', '2.1.0', { platforms: ['linux_amd64'] });
    // A large, incompressible second platform so the kill lands mid-upload.
    const { zipBuffers } = await import('../../scripts/lib/provider/zip-binary');
    writeFileSync(
      join(dist, 'terraform-provider-widget_2.1.0_windows_amd64.zip'),
      await zipBuffers({ 'terraform-provider-widget_v2.1.0.exe': randomBytes(8 * 1024 * 1024) }, { compress: false }),
    );
    const listed = await servedVersions('widget');
    expect(listed).toEqual(['1.0.0', '2.0.0']);

    const child = spawn(
      join(process.cwd(), 'node_modules', '.bin', 'tsx'),
      ['scripts/publish-provider.ts', dist, '--namespace', 'acme', '--persist-to', state, '--key-file', keyFile],
      { detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...killableEnv(dir) } },
    );
    let stderr = '';
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve) =>
      child.stderr!.on('data', (d) => {
        stderr += d;
        if (stderr.includes('uploading')) resolve();
      }),
    );
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

  it('publishes a supplied SHA256SUMS and signature byte for byte after verifying them', async () => {
    const dist = await writeDist(join(dir, 'widget-3.0.0'), 'widget', '3.0.0', { platforms: ['linux_amd64', 'darwin_arm64'] });
    const entries = [];
    for (const name of [
      'terraform-provider-widget_3.0.0_linux_amd64.zip',
      'terraform-provider-widget_3.0.0_darwin_arm64.zip',
      'terraform-provider-widget_3.0.0_manifest.json',
    ]) {
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

  it('release files lost from R2 (deleted by hand) are restored by a re-run of the same publish: served again and verified as Terraform verifies', async () => {
    const config = await readRegistryConfig({ configPath, persistTo: state });
    const address = { hostname, namespace: 'acme', type: 'widget' };
    const lost = ['terraform-provider-widget_1.0.0_linux_amd64.zip', 'terraform-provider-widget_1.0.0_SHA256SUMS'];
    const store = await openLocalStore(config);
    try {
      for (const filename of lost) await store.blobs.delete(releaseObjectKey(address, '1.0.0', filename));
    } finally {
      await store.close();
    }
    const doc = (await getJson('/v1/providers/acme/widget/1.0.0/download/linux/amd64')).body;
    await expect(download(new URL(doc.download_url, server.origin).href)).rejects.toThrow();

    // The same release again (the CLI signs SHA256SUMS anew; the stored signature is not lost, so it is not asked for).
    const again = await publish([join(dir, 'widget-1.0.0')]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).status).toBe('repaired');
    const downloads = join(dir, 'downloads-restored');
    mkdirSync(downloads, { recursive: true });
    const { archive } = await verifyLikeTerraform('widget', '1.0.0', 'linux_amd64', downloads);
    expect(sha256(archive)).toBe(doc.shasum);
  });
});
