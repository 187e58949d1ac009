import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectArchive } from '../../../scripts/lib/provider/archive';
import type { MirrorSummary } from '../../../scripts/lib/mirror/summary';
import { zipBuffers } from '../../../scripts/lib/provider/zip-binary';
import { executableName, parsePlatformName } from '../../../src/protocol/index';
import { configPath, runScript, tempDir } from '../helpers';
import { readRegistryConfig } from '../../../scripts/lib/config';
import { openLocalStore } from '../../../scripts/lib/stores/local';
import { providerAddress } from '../../../src/protocol/address';
import { versionsDocumentKey } from '../../../src/store/layout';
import { KV_MAX_VALUE_BYTES, versionsEntryBytes } from '../../../src/store/value-limits';
import { writeGoreleaserRelease, writeProvidersMirror } from '../../fixtures/goreleaser';

/**
 * `npm run mirror -- import DIR` on directories laid out as `terraform
 * providers mirror` writes them (the real command's output is imported in
 * test/e2e/mirror.test.ts): verified against their h1/zh, stored whole per
 * version, the unpacked layout refused before anything is written.
 */
const HOST = 'registry.terraform.io';
const temps: (() => void)[] = [];
afterAll(() => temps.forEach((cleanup) => cleanup()));

interface VersionSpec {
  version: string;
  platforms: string[];
  /** Replace the zip of the first platform after its hashes were written. */
  tamper?: boolean;
  /** Write a zh: hash that does not match. */
  wrongZh?: boolean;
  /** Leave out the executable. */
  noExecutable?: boolean;
}

/** A packed mirror directory: HOST/NS/TYPE/index.json, VERSION.json, zips. */
async function packedDir(root: string, ns: string, type: string, versions: VersionSpec[], host = HOST): Promise<void> {
  const dir = join(root, host, ns, type);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'index.json'), JSON.stringify({ versions: Object.fromEntries(versions.map((v) => [v.version, {}])) }));
  for (const spec of versions) {
    const archives: Record<string, { url: string; hashes: string[] }> = {};
    for (const [index, platform] of spec.platforms.entries()) {
      const p = parsePlatformName(platform);
      const filename = `terraform-provider-${type}_${spec.version}_${platform}.zip`;
      const files = spec.noExecutable
        ? { 'README.md': 'nothing' }
        : { [executableName(type, spec.version, p)]: `#!/bin/sh\necho ${type} ${spec.version} ${platform}\n` };
      writeFileSync(join(dir, filename), await zipBuffers(files));
      const digest = await inspectArchive(join(dir, filename));
      archives[platform] = { url: filename, hashes: [digest.h1, spec.wrongZh ? `zh:${'0'.repeat(64)}` : `zh:${digest.sha256Hex}`] };
      if (spec.tamper && index === 0) writeFileSync(join(dir, filename), await zipBuffers({ [executableName(type, spec.version, p)]: 'tampered' }));
    }
    writeFileSync(join(dir, `${spec.version}.json`), JSON.stringify({ archives }));
  }
}

async function mirror(state: string, args: string[]) {
  const result = await runScript('mirror', [...args, '--persist-to', state, '--wrangler-config', configPath]);
  let summary: MirrorSummary | undefined;
  try {
    summary = JSON.parse(result.stdout.trim().split('\n').pop() ?? '') as MirrorSummary;
  } catch {
    summary = undefined;
  }
  return { ...result, summary };
}

function fresh() {
  const { dir, cleanup } = tempDir('mirror-import');
  temps.push(cleanup);
  return { dir, source: join(dir, 'mirror'), state: join(dir, 'state') };
}

describe('mirror import', () => {
  it('imports every version whose zips match their h1 and zh, refuses the others, and a re-import changes nothing', async () => {
    const { source, state } = fresh();
    await packedDir(source, 'hashicorp', 'random', [
      { version: '3.5.0', platforms: ['linux_amd64', 'darwin_arm64'] },
      { version: '3.6.0', platforms: ['linux_amd64', 'darwin_arm64'], tamper: true },
      { version: '3.6.1', platforms: ['linux_amd64'], wrongZh: true },
      { version: '3.6.2', platforms: ['linux_amd64'], noExecutable: true },
    ]);
    await packedDir(source, 'hashicorp', 'null', [{ version: '3.2.0', platforms: ['linux_amd64'] }]);
    const result = await mirror(state, ['import', source, '--json']);
    expect(result.code, result.stderr).toBe(1);
    const random = result.summary!.providers.find((p) => p.address === `${HOST}/hashicorp/random`)!;
    const reasons = Object.fromEntries(random.versions.map((v) => [v.version, `${v.status}: ${v.reason ?? ''}`]));
    expect(reasons['3.5.0']).toBe('mirrored: ');
    expect(reasons['3.6.0']).toMatch(/^failed: hash check failed: .*terraform-provider-random_3\.6\.0_linux_amd64\.zip has h1:\S+, .*3\.6\.0\.json says h1:/);
    expect(reasons['3.6.1']).toMatch(/^failed: hash check failed: .*has zh:[0-9a-f]{64}, .*says zh:0{64}/);
    expect(reasons['3.6.2']).toMatch(/^failed: archive check failed: .*holds no provider executable terraform-provider-random_v3\.6\.2/);
    expect(result.summary!.providers.find((p) => p.address === `${HOST}/hashicorp/null`)!.status).toBe('mirrored');

    const list = await mirror(state, ['list']);
    expect(list.stdout).toBe(`${HOST}/hashicorp/null\n  3.2.0  linux_amd64\n${HOST}/hashicorp/random\n  3.5.0  darwin_arm64 linux_amd64\n`);

    const again = await mirror(state, ['import', join(source), '--json']);
    expect(again.summary!.providers.find((p) => p.address === `${HOST}/hashicorp/null`)!.status).toBe('unchanged');
  });

  it('refuses the unpacked layout with the layout it expects, and imports nothing', async () => {
    const { source, state } = fresh();
    await packedDir(source, 'hashicorp', 'null', [{ version: '3.2.0', platforms: ['linux_amd64'] }]);
    const unpacked = join(source, HOST, 'hashicorp', 'random', '3.5.0', 'linux_amd64');
    mkdirSync(unpacked, { recursive: true });
    writeFileSync(join(unpacked, 'terraform-provider-random_v3.5.0_x5'), '#!/bin/sh\n');
    const result = await mirror(state, ['import', source]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /is in the unpacked layout \(registry\.terraform\.io\/hashicorp\/random: VERSION\/OS_ARCH\/ .*expects the packed layout that `terraform providers mirror DIR` writes .*nothing was imported/,
    );
    expect((await mirror(state, ['list'])).stderr).toContain('holds no providers');
  });

  it('refuses a directory without providers and our own hostname', async () => {
    const { source, state, dir } = fresh();
    mkdirSync(source, { recursive: true });
    expect((await mirror(state, ['import', source])).stderr).toMatch(/holds no provider: expected HOST\/NAMESPACE\/TYPE\/index\.json/);
    const own = join(dir, 'own');
    await packedDir(own, 'acme', 'thing', [{ version: '1.0.0', platforms: ['linux_amd64'] }], 'registry.example.com');
    const result = await mirror(state, ['import', own, '--json']);
    expect(result.code).toBe(1);
    expect(result.summary!.providers[0]!.reason).toMatch(/this registry's own hostname .*npm run publish-provider/);
  });

  it('imports what `terraform providers mirror` writes for a goreleaser release of the scaffolding config: all 13 platforms', async () => {
    const { dir, source, state } = fresh();
    const release = await writeGoreleaserRelease(join(dir, 'repo'), 'scaffolding', '0.1.0');
    await writeProvidersMirror(
      source,
      release,
      { hostname: HOST, namespace: 'hashicorp' },
      async (platform) => (await inspectArchive(release.archives.get(platform)!)).h1,
    );
    const result = await mirror(state, ['import', source, '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.summary!.providers).toMatchObject([{ address: `${HOST}/hashicorp/scaffolding`, status: 'mirrored' }]);
    const list = await mirror(state, ['list']);
    expect(list.stdout).toBe(`${HOST}/hashicorp/scaffolding\n  0.1.0  ${[...release.platforms].sort().join(' ')}\n`);
  });

  it("counts the versions it adds together against KV's 25 MiB versions document: room for one more, one imported, the others refused", async () => {
    const { source, state } = fresh();
    await packedDir(source, 'acme', 'full', [
      { version: '1.0.0', platforms: ['linux_amd64'] },
      { version: '1.1.0', platforms: ['linux_amd64'] },
      { version: '1.2.0', platforms: ['linux_amd64'] },
    ]);
    // A stored versions document with room for one more version of one platform (and half of another), not two.
    const entry = versionsEntryBytes({ version: '1.0.0', protocols: ['5.0'], platforms: [{ os: 'linux', arch: 'amd64' }] });
    const target = KV_MAX_VALUE_BYTES - Math.round(1.5 * entry);
    const filler = (n: number) => JSON.stringify({ versions: [{ version: `0.0.0-${'a'.repeat(n)}`, protocols: ['5.0'], platforms: [] }] });
    const store = await openLocalStore(await readRegistryConfig({ configPath, persistTo: state }));
    try {
      await store.kv.put(versionsDocumentKey(providerAddress(HOST, 'acme', 'full')), filler(target - filler(0).length));
    } finally {
      await store.close();
    }

    const result = await mirror(state, ['import', source, '--json']);
    expect(result.code, result.stderr).toBe(1);
    const versions = result.summary!.providers[0]!.versions;
    expect(versions.map((v) => `${v.version} ${v.status}`)).toEqual(['1.0.0 mirrored', '1.1.0 failed', '1.2.0 failed']);
    for (const v of versions.slice(1)) expect(v.reason).toContain("over Workers KV's 25.00 MiB value limit");
  }, 120_000);
});
