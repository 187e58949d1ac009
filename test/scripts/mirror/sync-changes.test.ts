import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../../scripts/lib/config';
import { openLocalStore } from '../../../scripts/lib/stores/local';
import type { MirrorSummary } from '../../../scripts/lib/mirror/summary';
import { providerAddress } from '../../../src/protocol/index';
import { mirrorIndexKey, mirrorVersionKey, releaseObjectKey } from '../../../src/store/layout';
import { configPath, killableEnv, root, runScript, tempDir } from '../helpers';
import { StaticUpstream, type ReleaseSpec, releaseUpstreamGpgKey } from './upstream';

// The upstream's GnuPG home and agent go with this file.
afterAll(releaseUpstreamGpgKey);

/**
 * How a mirror follows its upstream over time: new versions appear, a
 * changed upstream is refused loudly, a killed sync leaves whole versions
 * only and a re-run completes it; the stored SHA256SUMS and signature verify
 * with GnuPG (checked in the terraform e2e, through the Worker).
 */
const NS = 'acme';
const TYPE = 'thing';
const PLATFORMS = ['linux_amd64', 'darwin_arm64'];
const release = (version: string, extra: Partial<ReleaseSpec> = {}): ReleaseSpec => ({ version, platforms: PLATFORMS, ...extra });

let upstream: StaticUpstream;
let state: string;
let cleanup: () => void;

beforeAll(async () => {
  upstream = await StaticUpstream.start({ namespace: NS, type: TYPE, releases: [release('1.0.0'), release('1.1.0'), release('1.2.0')] });
  ({ dir: state, cleanup } = tempDir('mirror-changes'));
  writeFileSync(join(state, 'terraformrc'), '');
});
afterAll(async () => {
  await upstream?.stop();
  cleanup?.();
});

const args = () => [
  'sync',
  `${upstream.host}/${NS}/${TYPE}`,
  '--version',
  '~> 1.0',
  '--platform',
  'linux_amd64',
  '--platform',
  'darwin_arm64',
  '--json',
  '--concurrency',
  '1',
  '--persist-to',
  join(state, 'state'),
  '--wrangler-config',
  configPath,
];
const env = () => ({ NODE_EXTRA_CA_CERTS: upstream.caPath, TF_CLI_CONFIG_FILE: join(state, 'terraformrc') });
const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split('\n').pop()!) as MirrorSummary;

/** What a network-mirror client would see: listed versions, and for each whether its documents and archives are whole. */
async function served(): Promise<{ listed: string[]; whole: Record<string, boolean> }> {
  const config = await readRegistryConfig({ configPath, persistTo: join(state, 'state') });
  const store = await openLocalStore(config);
  const address = providerAddress(upstream.host, NS, TYPE);
  try {
    const index = await store.kv.get(mirrorIndexKey(address), 'text');
    const listed = index ? Object.keys((JSON.parse(index) as { versions: object }).versions) : [];
    const whole: Record<string, boolean> = {};
    for (const version of listed) {
      const doc = JSON.parse((await store.kv.get(mirrorVersionKey(address, version), 'text')) ?? '{"archives":{}}') as { archives: Record<string, unknown> };
      let ok = Object.keys(doc.archives).length === PLATFORMS.length;
      for (const p of PLATFORMS) ok &&= !!(await store.blobs.head(releaseObjectKey(address, version, `terraform-provider-${TYPE}_${version}_${p}.zip`)));
      whole[version] = ok;
    }
    return { listed, whole };
  } finally {
    await store.close();
  }
}

describe('mirror sync over time', () => {
  it('a killed sync leaves only whole versions listed; the re-run completes it without downloading what it stored', async () => {
    // Kill the CLI (its whole process group) when the upstream is asked for 1.2.0's first archive.
    const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'scripts', 'mirror.ts'), ...args()], {
      cwd: root,
      env: { ...process.env, ...env(), ...killableEnv(state) },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    upstream.onRequest = (req, res) => {
      if (req.url?.includes('_1.2.0_') && req.url.endsWith('.zip')) {
        process.kill(-child.pid!, 'SIGKILL');
        res.destroy();
        return true;
      }
      return false;
    };
    const exit = await new Promise<number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ? -1 : code)));
    upstream.onRequest = null;
    expect(exit, stderr).toBe(-1);
    const after = await served();
    expect(after.listed.every((v) => after.whole[v])).toBe(true);
    expect(after.listed).not.toContain('1.2.0');

    const before = upstream.archiveRequests();
    const rerun = await runScript('mirror', args(), env());
    expect(rerun.code, rerun.stderr).toBe(0);
    const summary = summaryOf(rerun.stdout);
    const statuses = Object.fromEntries(summary.providers[0]!.versions.map((v) => [v.version, v.status]));
    expect(statuses['1.2.0']).toBe('mirrored');
    // Versions stored before the kill are not downloaded again.
    const storedBefore = Object.values(statuses).filter((s) => s === 'unchanged').length;
    expect(upstream.archiveRequests() - before).toBe((3 - storedBefore) * PLATFORMS.length);
    const complete = await served();
    expect(complete.listed).toEqual(['1.0.0', '1.1.0', '1.2.0']);
    expect(Object.values(complete.whole).every(Boolean)).toBe(true);
  });

  it('a sync stopped after the archives but before the record lists nothing new; the re-run completes it', async () => {
    await upstream.setReleases([release('1.0.0'), release('1.1.0'), release('1.2.0'), release('1.3.0')]);
    const crashed = await runScript('mirror', args(), { ...env(), EDGE_REGISTRY_TEST_CRASH_BEFORE: 'record' });
    expect(crashed.code).toBe(70);
    expect((await served()).listed).toEqual(['1.0.0', '1.1.0', '1.2.0']);
    const before = upstream.archiveRequests();
    const rerun = await runScript('mirror', args(), env());
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(upstream.archiveRequests() - before).toBe(PLATFORMS.length);
    expect(rerun.stderr).toMatch(/already stored: |storing/);
    expect((await served()).listed).toEqual(['1.0.0', '1.1.0', '1.2.0', '1.3.0']);
  });

  it('a new upstream version that matches appears on the next run; one outside the constraint does not', async () => {
    await upstream.setReleases([
      release('1.0.0'),
      release('1.1.0'),
      release('1.2.0'),
      release('1.3.0'),
      release('1.4.0'),
      release('2.0.0'),
      release('1.5.0-beta.1'),
    ]);
    const before = upstream.archiveRequests();
    const result = await runScript('mirror', args(), env());
    expect(result.code, result.stderr).toBe(0);
    const summary = summaryOf(result.stdout);
    expect(summary.providers[0]!.versions.map((v) => [v.version, v.status])).toEqual([
      ['1.0.0', 'unchanged'],
      ['1.1.0', 'unchanged'],
      ['1.2.0', 'unchanged'],
      ['1.3.0', 'unchanged'],
      ['1.4.0', 'mirrored'],
    ]);
    expect(upstream.archiveRequests() - before).toBe(PLATFORMS.length);
  });

  it('refuses loudly when the upstream now serves different bytes for a mirrored version, and keeps ours', async () => {
    await upstream.setReleases([release('1.0.0', { salt: 'rebuilt' }), release('1.1.0'), release('1.2.0'), release('1.3.0'), release('1.4.0')]);
    const before = await served();
    const requestsBefore = upstream.requests.length;
    const result = await runScript('mirror', args(), env());
    expect(result.code).toBe(1);
    const version = summaryOf(result.stdout).providers[0]!.versions.find((v) => v.version === '1.0.0')!;
    expect(version.status).toBe('failed');
    expect(version.platforms.map((p) => p.reason).join('\n')).toMatch(
      /UPSTREAM CHANGED: .*\/v1\/providers\/acme\/thing\/1\.0\.0\/download\/\w+\/\w+ now gives shasum [0-9a-f]{64} .*the mirror holds [0-9a-f]{64}.*kept ours/,
    );
    expect(result.stderr).toContain('UPSTREAM CHANGED');
    // Detected from the download documents: no archive was fetched to find out.
    expect(upstream.requests.slice(requestsBefore).filter((p) => p.endsWith('.zip'))).toEqual([]);
    expect(await served()).toEqual(before);
  });
});

describe('mirror sync: a version completed later', () => {
  let later: StaticUpstream;
  let dir: string;
  let done: () => void;
  beforeAll(async () => {
    later = await StaticUpstream.start({ namespace: NS, type: TYPE, releases: [{ version: '1.0.0', platforms: ['linux_amd64'] }] });
    ({ dir, cleanup: done } = tempDir('mirror-later'));
    writeFileSync(join(dir, 'terraformrc'), '');
  });
  afterAll(async () => {
    await later?.stop();
    done?.();
  });

  const sync = (platforms: string[]) =>
    runScript(
      'mirror',
      [
        'sync',
        `${later.host}/${NS}/${TYPE}`,
        '--version',
        '1.0.0',
        ...platforms.flatMap((p) => ['--platform', p]),
        '--json',
        '--persist-to',
        join(dir, 'state'),
        '--wrangler-config',
        configPath,
      ],
      { NODE_EXTRA_CA_CERTS: later.caPath, TF_CLI_CONFIG_FILE: join(dir, 'terraformrc') },
    );

  it('refuses a platform added upstream under a SHA256SUMS other than the one it mirrored, and keeps what it holds', async () => {
    const first = await sync(['linux_amd64']);
    expect(first.code, first.stderr).toBe(0);
    // The upstream adds darwin_arm64 to 1.0.0: the linux archive is the same, its signed SHA256SUMS is not.
    await later.setReleases([{ version: '1.0.0', platforms: ['linux_amd64', 'darwin_arm64'] }]);
    const result = await sync(['linux_amd64', 'darwin_arm64']);
    expect(result.code).toBe(1);
    const version = summaryOf(result.stdout).providers[0]!.versions[0]!;
    expect(version).toMatchObject({ version: '1.0.0', status: 'failed' });
    expect(version.reason).toMatch(
      /^UPSTREAM CHANGED: https:\/\/.*_1\.0\.0_SHA256SUMS differs from the SHA256SUMS mirrored with 1\.0\.0; mirrored files never change — kept ours$/,
    );
    expect(version.platforms.map((p) => [p.platform, p.status])).toEqual([
      ['darwin_arm64', 'failed'],
      ['linux_amd64', 'unchanged'],
    ]);
  });
});
