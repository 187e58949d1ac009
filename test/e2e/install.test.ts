import { access, constants, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { h1Hash } from '../../src/protocol/hashes';
import { zipDigests } from './local-publish';
import { installFromMirror, installFromRegistry, parseLockFile, type InstallRequest } from './installer';
import { MIRRORED_HOSTNAME, NAMESPACE, PLATFORMS, TYPE, startRegistry, type RunningRegistry } from './fixture';
import { createHash } from 'node:crypto';

/**
 * The registry as Terraform's installer sees it: `wrangler dev` on a fresh
 * local state, a signed release published into it, then installs through the
 * origin-registry protocol and the network mirror, over HTTP and HTTPS.
 */
describe.each([{ https: false }, { https: true }])('install from wrangler dev (https: $https)', ({ https }) => {
  let registry: RunningRegistry;

  beforeAll(async () => {
    registry = await startRegistry({ https });
  });
  afterAll(async () => {
    await registry?.close();
  });

  const request = (overrides: Partial<InstallRequest> = {}): InstallRequest => ({
    source: { hostname: registry.hostname, namespace: NAMESPACE, type: TYPE },
    constraints: '~> 1.2',
    os: 'linux',
    arch: 'amd64',
    installDir: join(registry.root, 'install', https ? 'https' : 'http'),
    http: { ca: registry.certificate?.pem },
    ...overrides,
  });

  /** What the lock file must hold for `version`: zh and h1 of every platform, computed here from the generated zips. */
  async function expectedHashes(version: string): Promise<string[]> {
    const release = registry.releases.find((r) => r.version === version)!;
    const hashes: string[] = [];
    for (const platform of PLATFORMS) {
      const zip = await readFile(release.archives.get(platform)!);
      hashes.push(`zh:${createHash('sha256').update(zip).digest('hex')}`, h1Hash(await zipDigests(zip)));
    }
    return hashes.sort();
  }

  it('serves discovery on the expected scheme', () => {
    expect(registry.server.origin.startsWith(https ? 'https://' : 'http://')).toBe(true);
  });

  it('installs the newest version meeting "~> 1.2" from the origin registry, signature checked by gpg', async () => {
    const installed = await installFromRegistry(registry.server.origin, request());
    // 1.4.0-beta.1 is newer but a pre-release; 2.0.0 is outside ~> 1.2.
    expect(installed.version).toBe('1.3.0');
    expect(installed.signedBy).toBe(registry.key.keyId);
    expect(basename(installed.executable)).toBe(`terraform-provider-${TYPE}_v1.3.0`);
    await access(installed.executable, constants.X_OK);
    expect(installed.hashes).toEqual(await expectedHashes('1.3.0'));
    expect(installed.hashes).toHaveLength(PLATFORMS.length * 2);

    const lock = parseLockFile(installed.lockBlock).get(`${registry.hostname}/${NAMESPACE}/${TYPE}`);
    expect(lock).toEqual({ version: '1.3.0', constraints: '~> 1.2', hashes: installed.hashes });
    expect(installed.lockBlock).toMatch(new RegExp(`^provider "${registry.hostname}/acme/thing" \\{\\n  version     = "1\\.3\\.0"\\n  constraints = "~> 1\\.2"\\n  hashes = \\[\\n    "h1:`));
  });

  it('honours a patch-level constraint and another platform', async () => {
    const installed = await installFromRegistry(registry.server.origin, request({ constraints: '~> 1.2.0', os: 'windows', arch: 'amd64' }));
    expect(installed.version).toBe('1.2.5');
    expect(basename(installed.executable)).toBe(`terraform-provider-${TYPE}_v1.2.5.exe`);
    expect(installed.hashes).toEqual(await expectedHashes('1.2.5'));
  });

  it('installs a pre-release only when named exactly', async () => {
    const installed = await installFromRegistry(registry.server.origin, request({ constraints: '1.4.0-beta.1', os: 'darwin', arch: 'arm64' }));
    expect(installed.version).toBe('1.4.0-beta.1');
  });

  it('fails like terraform init when nothing meets the constraint or the provider is unknown', async () => {
    await expect(installFromRegistry(registry.server.origin, request({ constraints: '~> 3.0' }))).rejects.toThrow(/no version/);
    await expect(installFromRegistry(registry.server.origin, request({ source: { hostname: registry.hostname, namespace: 'acme', type: 'absent' } })))
      .rejects.toThrow(/HTTP 404/);
    await expect(installFromRegistry(registry.server.origin, request({ os: 'freebsd', arch: 'amd64' }))).rejects.toThrow(/no freebsd_amd64 package/);
  });

  it('installs the same package through the network mirror, for its own and another hostname', async () => {
    const fromRegistry = await installFromRegistry(registry.server.origin, request());
    for (const hostname of [MIRRORED_HOSTNAME, registry.hostname]) {
      const installed = await installFromMirror(`${registry.server.origin}/v1/mirror/`, request({ source: { hostname, namespace: NAMESPACE, type: TYPE } }));
      expect(installed.version).toBe('1.3.0');
      expect(installed.h1).toBe(fromRegistry.h1);
      expect(installed.hashes).toEqual(fromRegistry.hashes);
      expect(parseLockFile(installed.lockBlock).get(`${hostname}/${NAMESPACE}/${TYPE}`)?.hashes).toEqual(fromRegistry.hashes);
    }
  });
});
