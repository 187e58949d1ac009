import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { botConfig, lockOn, proposals, pushedBranches, renovate, tail, terraformProvidersLock, terraformReadonlyInit } from './renovate/bot';
import { startForge, type Forge } from './renovate/forge';
import { ensureRenovate, type RenovateRun } from './renovate/renovate';
import { HOST, MODULE, PLATFORMS, PROVIDER, startRenovateRegistry, type RenovateRegistry } from './renovate/registry';
import { repositoryFiles } from './renovate/repository';
import { get } from './http';
import { missing, terraform } from '../tools';
import { EXPECTED_PROPOSALS } from './renovate/expected';

/**
 * A REAL Renovate 44 against the registry in private mode (ACCESS=private,
 * signed archive URLs), with the read token `npm run token -- create`
 * printed — the kind `terraform login` and the Tokens page mint too — in its
 * hostRules, and without one; then Dependabot's path: `terraform providers
 * lock` for three platforms with the token in the CLI configuration, and the
 * versions routes with a bearer token.
 */
let registry: RenovateRegistry;
let forge: Forge;
let anonymous: RenovateRun;
let bot: RenovateRun;

beforeAll(async () => {
  [registry] = await Promise.all([startRenovateRegistry('private'), ensureRenovate()]);
  forge = await startForge(join(registry.dir, 'forge'), repositoryFiles(registry.hashes.get('1.0.0')!));
  anonymous = await renovate(registry, 'anonymous', botConfig(forge, { dryRun: 'lookup' }));
  const anonymousRequests = registry.proxy.requested.length;
  console.log(`--- Renovate (private, no token, dry run): exit ${anonymous.code} in ${anonymous.wallMs} ms; ${anonymousRequests} proxied connections`);
  bot = await renovate(registry, 'token', botConfig(forge, { token: registry.readToken }));
  console.log(
    `--- Renovate (private, read token in hostRules): exit ${bot.code} in ${bot.wallMs} ms; branches ${pushedBranches(forge).join(', ')}; pull requests: ${forge.pulls.map((p) => p.title).join(' | ')}`,
  );
}, 600_000);
afterAll(async () => {
  await forge?.close();
  await registry?.stop();
});

describe('Renovate 44 against the registry, private mode', () => {
  it('without a token: every lookup is refused (401), Renovate reports it and proposes nothing', () => {
    expect(anonymous.code, tail(anonymous)).toBe(0);
    const found = proposals(anonymous);
    expect(found.map((p) => p.depName)).toEqual(EXPECTED_PROPOSALS.map((p) => p.depName));
    for (const p of found) {
      expect(p.updates).toEqual([]);
      expect(p.warnings).toEqual([
        { topic: expect.any(String), message: expect.stringMatching(/^Failed to look up terraform-(provider|module) package .*: no-result$/) },
      ]);
    }
    // Renovate's datasource layer logs each 401/403 as "Datasource unauthorized" with the URL it was refused.
    const refused = anonymous.lines.filter((line) => line.msg === 'Datasource unauthorized').map((line) => `${String(line.datasource)} ${String(line.url)}`);
    expect(new Set(refused)).toEqual(
      new Set([`terraform-provider https://${HOST}/v1/providers/acme/thing/versions`, `terraform-module https://${HOST}/v1/modules/acme/vpc/aws/versions`]),
    );
  });

  it('with our read token in hostRules: the same proposals as in public mode, no host but ours', () => {
    expect(bot.code, tail(bot)).toBe(0);
    expect(proposals(bot)).toEqual(EXPECTED_PROPOSALS.map((p) => ({ ...p, warnings: [] })));
    expect(new Set(registry.proxy.requested)).toEqual(new Set([`${HOST}:443`, new URL(forge.endpoint).host]));
    expect(registry.proxy.refused).toEqual([]);
  });

  it("lock files: the provider-update and lockFileMaintenance branches carry every platform's hashes, exactly (archives fetched through signed URLs)", () => {
    expect(lockOn(forge, 'renovate/thing-1.x', 'infra')).toEqual({ version: '1.2.0', constraints: '1.2.0', hashes: registry.hashes.get('1.2.0') });
    expect(lockOn(forge, 'renovate/thing-2.x', 'infra')).toEqual({ version: '2.0.0', constraints: '2.0.0', hashes: registry.hashes.get('2.0.0') });
    expect(lockOn(forge, 'renovate/lock-file-maintenance', 'range')).toEqual({ version: '1.2.0', constraints: '~> 1.0', hashes: registry.hashes.get('1.2.0') });
  });

  it.skipIf(missing('terraform', terraform))('terraform init -lockfile=readonly accepts them with the token in a credentials block', async () => {
    for (const [branch, dir, version] of [
      ['renovate/thing-1.x', 'infra', '1.2.0'],
      ['renovate/lock-file-maintenance', 'range', '1.2.0'],
    ] as const) {
      const init = await terraformReadonlyInit(registry, forge, branch, dir, registry.readToken);
      console.log(`--- terraform init -lockfile=readonly on ${branch} (${dir}/), private:\n${init.output}`);
      expect(init.ok, init.output).toBe(true);
      expect(init.output).toContain(`Installed ${PROVIDER} v${version}`);
    }
  });
});

describe("Dependabot's path, private mode", () => {
  it.skipIf(missing('terraform', terraform))(
    'terraform providers lock -platform=linux_amd64 -platform=darwin_arm64 -platform=windows_amd64 with the token in the CLI configuration',
    async () => {
      const platforms = ['linux_amd64', 'darwin_arm64', 'windows_amd64'];
      const locked = await terraformProvidersLock(registry, '2.0.0', platforms, registry.readToken);
      console.log(`--- terraform providers lock (private, token):\n${locked.output}\n${locked.lock}`);
      expect(locked.ok, locked.output).toBe(true);
      // h1: for each platform asked for, zh: for every platform in the signed SHA256SUMS.
      const all = registry.hashes.get('2.0.0')!;
      expect(all.filter((h) => h.startsWith('zh:'))).toHaveLength(PLATFORMS.length);
      const block = (await import('./installer')).parseLockFile(locked.lock!).get(PROVIDER)!;
      expect(block.version).toBe('2.0.0');
      expect(block.hashes.filter((h) => h.startsWith('zh:')).sort()).toEqual(all.filter((h) => h.startsWith('zh:')));
      expect(block.hashes.filter((h) => h.startsWith('h1:'))).toHaveLength(platforms.length);
      for (const hash of block.hashes) expect(all).toContain(hash);

      const without = await terraformProvidersLock(registry, '2.0.0', platforms);
      expect(without.ok).toBe(false);
      expect(without.output.replace(/\s+/g, ' ')).toContain(`host ${HOST} requires authentication credentials`);
    },
  );

  it('the versions routes with a bearer token, as its registry client calls them (401 without)', async () => {
    const https = (path: string, token?: string) =>
      get(`${registry.server.origin}${path}`, {
        ca: registry.certificate.pem,
        headers: { 'user-agent': 'dependabot-core', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      });
    const discovery = JSON.parse((await https('/.well-known/terraform.json')).body.toString('utf8')) as Record<string, string>;
    for (const path of [`${discovery['providers.v1']}acme/thing/versions`, `${discovery['modules.v1']}acme/vpc/aws/versions`]) {
      expect((await https(path)).status).toBe(401);
      const ok = await https(path, registry.readToken);
      expect(ok.status, ok.body.toString('utf8')).toBe(200);
    }
    const providers = JSON.parse((await https(`${discovery['providers.v1']}acme/thing/versions`, registry.readToken)).body.toString('utf8')) as {
      versions: { version: string }[];
    };
    expect(providers.versions.map((v) => v.version).sort()).toEqual(['1.0.0', '1.1.0', '1.2.0', '2.0.0']);
    const modules = JSON.parse((await https(`${discovery['modules.v1']}acme/vpc/aws/versions`, registry.readToken)).body.toString('utf8')) as {
      modules: { versions: { version: string }[] }[];
    };
    expect(modules.modules[0]!.versions.map((v) => v.version).sort()).toEqual(['1.0.0', '1.0.1', '1.1.0', '2.0.0']);
    void MODULE;
  });
});
