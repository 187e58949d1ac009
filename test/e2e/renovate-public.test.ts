import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { botConfig, lockOn, proposals, pushedBranches, renovate, repositoryWarnings, tail, terraformReadonlyInit } from './renovate/bot';
import { readPushed, startForge, type Forge } from './renovate/forge';
import { ensureRenovate, type RenovateRun } from './renovate/renovate';
import { DEPRECATED, HOST, PROVIDER, WITHDRAWN, startRenovateRegistry, type RenovateRegistry } from './renovate/registry';
import { repositoryFiles } from './renovate/repository';
import { EXPECTED_PROPOSALS } from './renovate/expected';
import { missing, terraform } from '../tools';

/**
 * A REAL Renovate 44 (test/renovate/) as a bot against the registry in public
 * mode: registry.acme.test over HTTPS through a CONNECT proxy, a Gitea API
 * stand-in in front of a real bare git repository it clones and pushes to.
 * One registry, one Renovate run whose lookups, branches and lock files the
 * tests below read; then terraform checks the lock files it pushed.
 */
let registry: RenovateRegistry;
let forge: Forge;
let bot: RenovateRun;

beforeAll(async () => {
  [registry] = await Promise.all([startRenovateRegistry('public'), ensureRenovate()]);
  forge = await startForge(join(registry.dir, 'forge'), repositoryFiles(registry.hashes.get('1.0.0')!));
  bot = await renovate(registry, 'public', botConfig(forge));
  console.log(
    `--- Renovate (public): exit ${bot.code} in ${bot.wallMs} ms; branches ${pushedBranches(forge).join(', ')}; pull requests: ${forge.pulls.map((p) => p.title).join(' | ')}`,
  );
}, 600_000);
afterAll(async () => {
  await forge?.close();
  await registry?.stop();
});

describe('Renovate 44 against the registry, public mode', () => {
  it('proposes exactly the newer versions we hold (never a withdrawn one), with no lookup warning, asking no host but ours', () => {
    expect(bot.code, tail(bot)).toBe(0);
    const found = proposals(bot);
    console.log(`--- proposals:\n${found.map((p) => `${p.packageFile} ${p.depName} ${p.currentValue} → ${p.updates.join(', ')}`).join('\n')}`);
    expect(found).toEqual(EXPECTED_PROPOSALS.map((p) => ({ ...p, warnings: [] })));
    for (const p of found) expect(p.updates.join()).not.toContain(p.depName === 'thing' ? WITHDRAWN.provider : WITHDRAWN.module);
    expect(repositoryWarnings(bot), tail(bot)).toEqual([]);
    const forgeHost = new URL(forge.endpoint).host;
    expect(new Set(registry.proxy.requested)).toEqual(new Set([`${HOST}:443`, forgeHost]));
    expect(registry.proxy.refused).toEqual([]);
    expect(forge.unknown).toEqual([]);
    // A limit, not a wish: per-version deprecation reaches Terraform as `warnings`, which Renovate does not read.
    expect(found[0]!.updates).toContain(`${DEPRECATED.provider} (minor)`);
  });

  it('pushes a provider-update branch whose .terraform.lock.hcl holds 1.2.0 with the h1: and zh: hashes of every published platform, exactly', () => {
    expect(pushedBranches(forge)).toContain('renovate/thing-1.x');
    expect(lockOn(forge, 'renovate/thing-1.x', 'infra')).toEqual({ version: '1.2.0', constraints: '1.2.0', hashes: registry.hashes.get('1.2.0') });
    expect(lockOn(forge, 'renovate/thing-2.x', 'infra')).toEqual({ version: '2.0.0', constraints: '2.0.0', hashes: registry.hashes.get('2.0.0') });
    // "~> 1.0" already allows 1.2.0: Renovate updates only its lock file, on a branch of its own.
    expect(lockOn(forge, 'renovate/thing-1.x-lockfile', 'range')).toEqual({ version: '1.2.0', constraints: '~> 1.0', hashes: registry.hashes.get('1.2.0') });
    expect(forge.pulls.map((p) => p.head)).toEqual(expect.arrayContaining(['renovate/thing-1.x', 'renovate/thing-2.x', 'renovate/thing-1.x-lockfile']));
  });

  it('pushes a lockFileMaintenance branch: "~> 1.0" moves from 1.0.0 to 1.2.0 with every platform\'s hashes; the exact pin stays', () => {
    expect(pushedBranches(forge)).toContain('renovate/lock-file-maintenance');
    expect(lockOn(forge, 'renovate/lock-file-maintenance', 'range')).toEqual({ version: '1.2.0', constraints: '~> 1.0', hashes: registry.hashes.get('1.2.0') });
    expect(lockOn(forge, 'renovate/lock-file-maintenance', 'infra')).toEqual(lockOn(forge, 'main', 'infra'));
  });

  it('pushes module-update branches with the new version and constraint', () => {
    const minor = readPushed(forge, 'renovate/registry.acme.test-acme-vpc-aws-1.x', 'infra/main.tf') ?? '';
    expect(minor).toContain('version = "1.1.0"');
    expect(minor).toContain('version = "~> 1.1.0"');
    const major = readPushed(forge, 'renovate/registry.acme.test-acme-vpc-aws-2.x', 'infra/main.tf') ?? '';
    expect(major).toContain('version = "2.0.0"');
    expect(major).toContain('version = "~> 2.0.0"');
  });

  it.skipIf(missing('terraform', terraform))('terraform init -lockfile=readonly accepts the lock files Renovate pushed and installs that version', async () => {
    for (const [branch, dir, version] of [
      ['renovate/thing-1.x', 'infra', '1.2.0'],
      ['renovate/thing-2.x', 'infra', '2.0.0'],
      ['renovate/lock-file-maintenance', 'range', '1.2.0'],
    ] as const) {
      const init = await terraformReadonlyInit(registry, forge, branch, dir);
      console.log(`--- terraform init -lockfile=readonly on ${branch} (${dir}/):\n${init.output}`);
      expect(init.ok, init.output).toBe(true);
      expect(init.output).toContain(`Installed ${PROVIDER} v${version}`);
    }
  });
});
