import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../../scripts/lib/config';
import { openLocalStore } from '../../../scripts/lib/stores/local';
import type { MirrorSummary } from '../../../scripts/lib/mirror/summary';
import { providerAddress } from '../../../src/protocol/index';
import { mirrorIndexKey, mirrorVersionKey, releaseObjectKey, versionsDocumentKey } from '../../../src/store/layout';
import { KV_MAX_VALUE_BYTES, versionsEntryBytes } from '../../../src/store/value-limits';
import { configPath, freePort, runScript, tempDir, type CliResult } from '../helpers';
import { StaticUpstream, upstreamGpgKey, type ReleaseSpec, releaseUpstreamGpgKey } from './upstream';

// The upstream's GnuPG home and agent go with this file.
afterAll(releaseUpstreamGpgKey);

/**
 * `npm run mirror -- sync` against a local upstream registry over HTTPS with
 * its own CA (trusted through NODE_EXTRA_CA_CERTS, as a user would), into a
 * fresh local state per test.
 */
const NS = 'acme';
const TYPE = 'thing';
const PLATFORMS = ['linux_amd64', 'darwin_arm64', 'windows_amd64'];
const good = (version: string, extra: Partial<ReleaseSpec> = {}): ReleaseSpec => ({ version, platforms: PLATFORMS, ...extra });

let upstream: StaticUpstream;
const temps: (() => void)[] = [];

beforeAll(async () => {
  upstream = await StaticUpstream.start({ namespace: NS, type: TYPE, releases: [good('1.0.0'), good('1.1.0'), good('2.0.0')] });
});
afterAll(async () => {
  await upstream?.stop();
  for (const cleanup of temps) cleanup();
});

function freshState(): { state: string; dir: string } {
  const { dir, cleanup } = tempDir('mirror');
  temps.push(cleanup);
  writeFileSync(join(dir, 'terraformrc'), '');
  return { state: join(dir, 'state'), dir };
}

async function mirror(state: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult & { summary?: MirrorSummary }> {
  const result = await runScript('mirror', [...args, '--persist-to', state, '--wrangler-config', configPath], {
    NODE_EXTRA_CA_CERTS: upstream.caPath,
    TF_CLI_CONFIG_FILE: join(state, '..', 'terraformrc'),
    ...env,
  });
  const line = result.stdout.trim().split('\n').pop();
  let summary: MirrorSummary | undefined;
  try {
    summary = line ? (JSON.parse(line) as MirrorSummary) : undefined;
  } catch {
    summary = undefined;
  }
  return { ...result, summary };
}

const VERSIONS_CHECKED = ['0.1.0', '0.2.0', '0.3.0', '0.4.0', '0.5.0', '0.6.0', '0.7.0', '0.8.0', '0.9.0', '0.10.0', '1.0.0', '1.1.0', '2.0.0', '3.0.0'];

async function readState(state: string, host = upstream.host) {
  const config = await readRegistryConfig({ configPath, persistTo: state });
  const store = await openLocalStore(config);
  const address = providerAddress(host, NS, TYPE);
  try {
    const index = await store.kv.get(mirrorIndexKey(address), 'text');
    const versionDocs = new Map<string, unknown>();
    for (const v of VERSIONS_CHECKED) {
      const text = await store.kv.get(mirrorVersionKey(address, v), 'text');
      if (text) versionDocs.set(v, JSON.parse(text));
    }
    // Archives present in R2, per version (read now: the store closes below).
    const archives = new Map<string, string[]>();
    for (const version of VERSIONS_CHECKED) {
      const found: string[] = [];
      for (const p of PLATFORMS) {
        if (await store.blobs.head(releaseObjectKey(address, version, `terraform-provider-${TYPE}_${version}_${p}.zip`))) found.push(p);
      }
      archives.set(version, found);
    }
    const objects = async (version: string) => archives.get(version)!;
    return { index: index ? (JSON.parse(index) as { versions: Record<string, object> }) : null, versionDocs, objects };
  } finally {
    await store.close();
  }
}

const platformStatuses = (summary: MirrorSummary, version: string) =>
  Object.fromEntries(summary.providers[0]!.versions.find((v) => v.version === version)!.platforms.map((p) => [p.platform, p.status]));

describe('mirror sync', () => {
  it('mirrors every matching version × platform, verified, then a re-run downloads nothing and says up to date', async () => {
    const { state } = freshState();
    const before = upstream.archiveRequests();
    const first = await mirror(state, [
      'sync',
      `${upstream.host}/${NS}/${TYPE}`,
      '--version',
      '~> 1.0',
      '--platform',
      'linux_amd64',
      '--platform',
      'darwin_arm64',
      '--json',
    ]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.summary!.ok).toBe(true);
    expect(first.summary!.providers[0]!.versions.map((v) => [v.version, v.status])).toEqual([
      ['1.0.0', 'mirrored'],
      ['1.1.0', 'mirrored'],
    ]);
    expect(platformStatuses(first.summary!, '1.1.0')).toEqual({ darwin_arm64: 'mirrored', linux_amd64: 'mirrored' });
    expect(upstream.archiveRequests() - before).toBe(4);
    const stored = await readState(state);
    expect(Object.keys(stored.index!.versions)).toEqual(['1.0.0', '1.1.0']);
    const doc = stored.versionDocs.get('1.1.0') as { archives: Record<string, { url: string; hashes: string[] }> };
    expect(Object.keys(doc.archives).sort()).toEqual(['darwin_arm64', 'linux_amd64']);
    const summaryPlatform = first.summary!.providers[0]!.versions[1]!.platforms.find((p) => p.platform === 'linux_amd64')!;
    expect(doc.archives.linux_amd64!.hashes).toEqual([summaryPlatform.h1, summaryPlatform.zh]);

    const again = await mirror(state, [
      'sync',
      `${upstream.host}/${NS}/${TYPE}`,
      '--version',
      '~> 1.0',
      '--platform',
      'linux_amd64',
      '--platform',
      'darwin_arm64',
      '--json',
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.summary!.upstream_requests!.archive).toBe(0);
    expect(upstream.archiveRequests() - before).toBe(4);
    expect(again.summary!.providers[0]!.versions.map((v) => v.status)).toEqual(['unchanged', 'unchanged']);
    expect(again.stderr).toContain('up to date');

    // Adding a platform fetches exactly that platform.
    const wider = await mirror(state, [
      'sync',
      `${upstream.host}/${NS}/${TYPE}`,
      '--version',
      '1.1.0',
      '--platform',
      'linux_amd64',
      '--platform',
      'windows_amd64',
      '--json',
    ]);
    expect(wider.code, wider.stderr).toBe(0);
    expect(wider.summary!.upstream_requests!.archive).toBe(1);
    expect(platformStatuses(wider.summary!, '1.1.0')).toEqual({ linux_amd64: 'unchanged', windows_amd64: 'mirrored' });
    expect(Object.keys(((await readState(state)).versionDocs.get('1.1.0') as { archives: object }).archives).sort()).toEqual([
      'darwin_arm64',
      'linux_amd64',
      'windows_amd64',
    ]);
  });
});

describe('mirror sync against a hostile upstream', () => {
  let hostile: StaticUpstream;
  const defects = {
    '0.1.0': 'wrong-shasum',
    '0.2.0': 'missing-sums-line',
    '0.3.0': 'bad-signature',
    '0.4.0': 'foreign-key',
    '0.5.0': 'no-executable',
    '0.6.0': 'flaky-500',
    '0.7.0': 'hang',
    '0.8.0': 'redirect-loop',
    '0.9.0': 'huge-json',
    '0.10.0': 'malformed-json',
  } as const;
  beforeAll(async () => {
    hostile = await StaticUpstream.start({
      namespace: NS,
      type: TYPE,
      absoluteDiscovery: true,
      releases: [...Object.entries(defects).map(([version, defect]) => ({ version, platforms: ['linux_amd64', 'darwin_arm64'], defect })), good('1.0.0')],
    });
  });
  afterAll(async () => {
    await hostile?.stop();
  });

  it('refuses each defect with the URL and the failed check, stores nothing of those versions, keeps what verified, exits 1', async () => {
    const { state } = freshState();
    const result = await runScript(
      'mirror',
      [
        'sync',
        `${hostile.host}/${NS}/${TYPE}`,
        '--version',
        '>= 0.1.0',
        '--platform',
        'linux_amd64',
        '--platform',
        'darwin_arm64',
        '--json',
        '--timeout',
        '1',
        '--retries',
        '2',
        '--persist-to',
        state,
        '--wrangler-config',
        configPath,
      ],
      { NODE_EXTRA_CA_CERTS: hostile.caPath, TF_CLI_CONFIG_FILE: join(state, '..', 'terraformrc') },
    );
    const summary = JSON.parse(result.stdout.trim().split('\n').pop()!) as MirrorSummary;
    expect(result.code, result.stderr).toBe(1);
    expect(summary.ok).toBe(false);
    const reasons = Object.fromEntries(summary.providers[0]!.versions.map((v) => [v.version, `${v.status}: ${v.reason ?? ''}`]));
    const base = `https://${hostile.host}`;
    expect(reasons['0.1.0']).toMatch(new RegExp(`^failed: .*checksum check failed: ${base}/files/terraform-provider-thing_0.1.0_\\w+.zip has SHA-256`));
    expect(reasons['0.2.0']).toMatch(
      /^failed: SHA256SUMS check failed: .*_0\.2\.0_SHA256SUMS has no line for terraform-provider-thing_0\.2\.0_linux_amd64\.zip/,
    );
    expect(reasons['0.3.0']).toMatch(/^failed: signature check failed: .*_0\.3\.0_SHA256SUMS\.sig .*does not verify SHA256SUMS with any key in signing_keys/);
    expect(reasons['0.4.0']).toMatch(/^failed: signature check failed: .*_0\.4\.0_SHA256SUMS\.sig \(made by key [0-9A-F]{16}\) does not verify/);
    expect(reasons['0.5.0']).toMatch(
      /^failed: .*archive check failed: .*_0\.5\.0_\w+\.zip \(\w+\) holds no provider executable terraform-provider-thing_v0\.5\.0 \(found README\.md\)/,
    );
    expect(reasons['0.6.0']).toBe('mirrored: ');
    expect(reasons['0.7.0']).toMatch(
      new RegExp(`^failed: download document \\(\\w+\\) ${base}/v1/providers/acme/thing/0.7.0/download/\\w+/\\w+: timed out .*gave up after 3 attempts`),
    );
    expect(reasons['0.8.0']).toMatch(/^failed: .*archive .*\/files\/loop-a: redirect loop/);
    expect(reasons['0.9.0']).toMatch(/^failed: download document .*0\.9\.0.*over the 8388608-byte limit/);
    expect(reasons['0.10.0']).toMatch(/^failed: download document .*0\.10\.0.*not valid JSON/);
    expect(reasons['1.0.0']).toBe('mirrored: ');
    // 503 + Retry-After: 1, twice, then success: retried after waiting as told.
    expect(result.stderr).toMatch(/archive .*_0\.6\.0_\w+\.zip: HTTP 503; retrying in 1\.0 s/);

    const stored = await readState(state, hostile.host);
    expect(Object.keys(stored.index!.versions)).toEqual(['0.6.0', '1.0.0']);
    expect([...stored.versionDocs.keys()].sort()).toEqual(['0.6.0', '1.0.0']);
    for (const version of Object.keys(defects).filter((v) => v !== '0.6.0')) expect(await stored.objects(version)).toEqual([]);
  });
});

describe('mirror sync: refusals, dry run, credentials, list', () => {
  it('refuses our own hostname, explains why, and writes nothing', async () => {
    const { state } = freshState();
    const result = await mirror(state, ['sync', 'registry.example.com/acme/thing', '--version', '~> 1.0', '--json']);
    expect(result.code).toBe(1);
    expect(result.summary!.providers[0]!.reason).toMatch(/registry\.example\.com is this registry's own hostname .*already served by the mirror/);
  });

  it('--dry-run lists the plan, downloads no archive and writes nothing', async () => {
    const { state } = freshState();
    const before = upstream.archiveRequests();
    const result = await mirror(state, ['sync', `${upstream.host}/${NS}/${TYPE}`, '--version', '>= 1.0.0', '--platform', 'linux_amd64', '--dry-run', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.summary!.providers[0]!.versions.map((v) => v.status)).toEqual(['planned', 'planned', 'planned']);
    expect(upstream.archiveRequests()).toBe(before);
    expect(result.stderr).toContain(`would fetch https://${upstream.host}/files/terraform-provider-thing_2.0.0_linux_amd64.zip`);
    const stored = await readState(state);
    expect(stored.index).toBeNull();
    expect(stored.versionDocs.size).toBe(0);
  });

  it('fails fast and clearly when the upstream is down', async () => {
    const { state } = freshState();
    const port = await freePort(); // nothing listens there
    const result = await mirror(state, ['sync', `localhost:${port}/acme/thing`, '--version', '~> 1.0', '--retries', '1', '--json']);
    expect(result.code).toBe(1);
    expect(result.summary!.providers[0]!.reason).toMatch(
      /service discovery https:\/\/localhost:\d+\/\.well-known\/terraform\.json: connection refused \(gave up after 2 attempts\)/,
    );
  });

  it('sends the token of a credentials block in TF_CLI_CONFIG_FILE to a private upstream, and says which variable to set without one', async () => {
    const secret = 'upstream-secret-token';
    const privateUpstream = await StaticUpstream.start({ namespace: NS, type: TYPE, releases: [good('1.0.0')], requireToken: secret });
    try {
      const { state, dir } = freshState();
      const env = { NODE_EXTRA_CA_CERTS: privateUpstream.caPath };
      const args = [
        'sync',
        `${privateUpstream.host}/${NS}/${TYPE}`,
        '--version',
        '1.0.0',
        '--platform',
        'linux_amd64',
        '--json',
        '--persist-to',
        state,
        '--wrangler-config',
        configPath,
      ];
      const without = await runScript('mirror', args, { ...env, TF_CLI_CONFIG_FILE: join(dir, 'terraformrc') });
      expect(without.code).toBe(1);
      expect(without.stderr).toMatch(/HTTP 401 \(no credentials for localhost:\d+: set TF_TOKEN_localhost:\d+|HTTP 401 \(no credentials for localhost:\d+/);
      writeFileSync(join(dir, 'with-token.tfrc'), `# CLI config\ncredentials "${privateUpstream.host}" {\n  token = "${secret}"\n}\n`);
      const withToken = await runScript('mirror', args, { ...env, TF_CLI_CONFIG_FILE: join(dir, 'with-token.tfrc') });
      expect(withToken.code, withToken.stderr).toBe(0);
      expect(withToken.stderr + withToken.stdout).not.toContain(secret);
    } finally {
      await privateUpstream.stop();
    }
  });

  it('list shows what the mirror holds (text and --json)', async () => {
    const { state } = freshState();
    expect((await mirror(state, ['sync', `${upstream.host}/${NS}/${TYPE}`, '--version', '2.0.0', '--platform', 'linux_amd64'])).code).toBe(0);
    const text = await mirror(state, ['list']);
    expect(text.stdout).toContain(`${upstream.host}/acme/thing\n  2.0.0  linux_amd64\n`);
    const json = JSON.parse((await mirror(state, ['list', '--json'])).stdout) as {
      providers: { address: string; own: boolean; versions: { version: string; platforms: string[]; signedBy: string }[] }[];
    };
    expect(json.providers).toEqual([
      {
        address: `${upstream.host}/acme/thing`,
        own: false,
        versions: [expect.objectContaining({ version: '2.0.0', platforms: ['linux_amd64'], signedBy: (await upstreamGpgKey()).keyId })],
      },
    ]);
  });

  it("counts the versions it adds together against KV's 25 MiB versions document: room for one more, one mirrored, the others refused", async () => {
    const { state } = freshState();
    const address = providerAddress(upstream.host, NS, TYPE);
    // A stored versions document with room for one more version of one platform (and half of another), not two.
    const entry = versionsEntryBytes({ version: '1.0.0', protocols: ['5.0'], platforms: [{ os: 'linux', arch: 'amd64' }] });
    const target = KV_MAX_VALUE_BYTES - Math.round(1.5 * entry);
    const filler = (n: number) => JSON.stringify({ versions: [{ version: `0.0.0-${'a'.repeat(n)}`, protocols: ['5.0'], platforms: [] }] });
    const body = filler(target - filler(0).length);
    expect(body.length).toBe(target);
    const store = await openLocalStore(await readRegistryConfig({ configPath, persistTo: state }));
    try {
      await store.kv.put(versionsDocumentKey(address), body);
    } finally {
      await store.close();
    }

    const run = await mirror(state, ['sync', `${upstream.host}/${NS}/${TYPE}`, '--version', '>= 1.0.0', '--platform', 'linux_amd64', '--json']);
    const versions = run.summary!.providers[0]!.versions;
    expect(versions.map((v) => v.version).sort()).toEqual(['1.0.0', '1.1.0', '2.0.0']);
    expect(
      versions.filter((v) => v.status === 'mirrored'),
      run.stderr,
    ).toHaveLength(1);
    const refused = versions.filter((v) => v.status === 'failed');
    expect(refused).toHaveLength(2);
    for (const v of refused) expect(v.reason).toContain("over Workers KV's 25.00 MiB value limit");
    expect(run.code).not.toBe(0);
  }, 120_000);
});
