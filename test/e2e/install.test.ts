import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, constants, mkdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { h1Hash } from '../../src/protocol/hashes';
import { installFromMirror, installFromRegistry, parseLockFile, type InstallRequest } from './installer';
import { MIRRORED_HOSTNAME, NAMESPACE, PLATFORMS, TYPE, VERSIONS, publishState, serve, type PublishedState } from './fixture';
import { newestMatching, parseConstraints } from '../../src/protocol/constraints';
import { zipDigests } from './release';
import type { DevServer } from './server';
import { get as httpGet } from './http';
import { missing, terraform } from '../tools';

/**
 * The registry as Terraform's installer sees it: a signed release published
 * with the CLI into a fresh local state, `wrangler dev` serving it over
 * HTTPS and then plain HTTP, installs through the origin-registry protocol
 * and the network mirror by our installer client, and (over HTTPS, where a
 * terraform binary exists) by real `terraform init`.
 */
const run = promisify(execFile);
const goPlatform = { os: process.platform === 'win32' ? 'windows' : process.platform, arch: process.arch === 'x64' ? 'amd64' : process.arch };

let state: PublishedState;

beforeAll(async () => {
  state = await publishState();
});
afterAll(async () => {
  await state?.dispose();
});

/** What a lock file must hold for `version`: zh and h1 of every platform, computed here from the generated zips. */
async function expectedHashes(version: string): Promise<string[]> {
  const release = state.releases.find((r) => r.version === version)!;
  const hashes: string[] = [];
  for (const platform of PLATFORMS) {
    const zip = await readFile(release.archives.get(platform)!);
    hashes.push(`zh:${createHash('sha256').update(zip).digest('hex')}`, h1Hash(await zipDigests(zip)));
  }
  return hashes.sort();
}

describe.each([{ https: true }, { https: false }])('install from wrangler dev (https: $https)', ({ https }) => {
  let server: DevServer;

  beforeAll(async () => {
    server = await serve(state, { https });
  });
  afterAll(async () => {
    await server?.stop();
  });

  const request = (overrides: Partial<InstallRequest> = {}): InstallRequest => ({
    source: { hostname: state.hostname, namespace: NAMESPACE, type: TYPE },
    constraints: '~> 1.2',
    os: 'linux',
    arch: 'amd64',
    installDir: join(state.root, 'install', https ? 'https' : 'http'),
    http: { ca: https ? state.certificate.pem : undefined },
    ...overrides,
  });

  it('serves on the expected scheme', () => {
    expect(server.origin).toBe(`${https ? 'https' : 'http'}://localhost:${state.port}`);
  });

  it('sends documents gzip-compressed to a client that accepts gzip, and plain to one that does not', async () => {
    const path = `${server.origin}/v1/providers/${NAMESPACE}/${TYPE}/1.3.0/download/linux/amd64`;
    const ca = https ? state.certificate.pem : undefined;
    const compressed = await httpGet(path, { ca });
    expect(compressed.headers['content-encoding']).toBe('gzip');
    const plain = await httpGet(path, { ca, headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(compressed.body.toString('utf8'))).toEqual(JSON.parse(plain.body.toString('utf8')));
  });

  it('installs the newest version meeting "~> 1.2" from the origin registry, signature checked by gpg', async () => {
    const installed = await installFromRegistry(server.origin, request());
    // 1.4.0-beta.1 is newer but a pre-release; 2.0.0 is outside ~> 1.2.
    expect(installed.version).toBe('1.3.0');
    expect(installed.signedBy).toBe(state.key.keyId);
    expect(basename(installed.executable)).toBe(`terraform-provider-${TYPE}_v1.3.0`);
    await access(installed.executable, constants.X_OK);
    expect(installed.hashes).toEqual(await expectedHashes('1.3.0'));
    expect(installed.hashes).toHaveLength(PLATFORMS.length * 2);

    const lock = parseLockFile(installed.lockBlock).get(`${state.hostname}/${NAMESPACE}/${TYPE}`);
    expect(lock).toEqual({ version: '1.3.0', constraints: '~> 1.2', hashes: installed.hashes });
    expect(
      installed.lockBlock.startsWith(`provider "${state.hostname}/acme/thing" {\n  version     = "1.3.0"\n  constraints = "~> 1.2"\n  hashes = [\n    "h1:`),
    ).toBe(true);
  });

  it('honours a patch-level constraint and another platform', async () => {
    const installed = await installFromRegistry(server.origin, request({ constraints: '~> 1.2.0', os: 'windows', arch: 'amd64' }));
    expect(installed.version).toBe('1.2.5');
    expect(basename(installed.executable)).toBe(`terraform-provider-${TYPE}_v1.2.5.exe`);
    expect(installed.hashes).toEqual(await expectedHashes('1.2.5'));
  });

  it('installs a pre-release only when named exactly', async () => {
    const installed = await installFromRegistry(server.origin, request({ constraints: '1.4.0-beta.1', os: 'darwin', arch: 'arm64' }));
    expect(installed.version).toBe('1.4.0-beta.1');
  });

  it('fails like terraform init when nothing meets the constraint, the provider is unknown or the platform missing', async () => {
    await expect(installFromRegistry(server.origin, request({ constraints: '~> 3.0' }))).rejects.toThrow(/no version/);
    await expect(installFromRegistry(server.origin, request({ source: { hostname: state.hostname, namespace: NAMESPACE, type: 'absent' } }))).rejects.toThrow(
      /HTTP 404/,
    );
    await expect(installFromRegistry(server.origin, request({ os: 'freebsd', arch: 'amd64' }))).rejects.toThrow(/no freebsd_amd64 package/);
  });

  it('installs the same package through the network mirror, for its own and another hostname', async () => {
    const fromRegistry = await installFromRegistry(server.origin, request());
    for (const hostname of [MIRRORED_HOSTNAME, state.hostname]) {
      const installed = await installFromMirror(`${server.origin}/v1/mirror/`, request({ source: { hostname, namespace: NAMESPACE, type: TYPE } }));
      expect(installed.version).toBe('1.3.0');
      expect(installed.h1).toBe(fromRegistry.h1);
      expect(installed.hashes).toEqual(fromRegistry.hashes);
      expect(parseLockFile(installed.lockBlock).get(`${hostname}/${NAMESPACE}/${TYPE}`)?.hashes).toEqual(fromRegistry.hashes);
    }
  });

  // Real terraform refuses plain HTTP for discovery and mirrors, so only over HTTPS.
  if (https)
    describe('terraform init', () => {
      if (!terraform) {
        console.warn('e2e: skipping the terraform init tests: no terraform binary on this machine (/usr/local/bin, /usr/bin or PATH)');
      }

      /** terraform init in a fresh directory with its own CLI config, trusting only the dev server's certificate. */
      async function init(name: string, source: string, cliConfig: string, constraint = '~> 1.2'): Promise<{ dir: string; lock: string; output: string }> {
        const dir = join(state.root, 'terraform', name);
        await mkdir(dir, { recursive: true });
        await writeFile(
          join(dir, 'main.tf'),
          `terraform {\n  required_providers {\n    thing = {\n      source  = "${source}"\n      version = "${constraint}"\n    }\n  }\n}\n`,
        );
        await writeFile(join(dir, 'cli.tfrc'), cliConfig);
        const env: NodeJS.ProcessEnv = {
          PATH: process.env.PATH,
          HOME: dir,
          TF_CLI_CONFIG_FILE: join(dir, 'cli.tfrc'),
          SSL_CERT_FILE: state.certificate.certPath,
          CHECKPOINT_DISABLE: '1',
          TF_IN_AUTOMATION: '1',
        };
        try {
          const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color'], { cwd: dir, env, timeout: 90_000 });
          return { dir, lock: await readFile(join(dir, '.terraform.lock.hcl'), 'utf8'), output: stdout + stderr };
        } catch (error) {
          const { stdout, stderr } = error as { stdout?: string; stderr?: string };
          throw new Error(`terraform init failed:\n${stdout}\n${stderr}\n--- wrangler dev ---\n${server.log().slice(-3000)}`);
        }
      }

      it.skipIf(missing('terraform', terraform))(
        'installs from the origin registry (source = localhost:PORT/acme/thing) and locks every platform',
        async () => {
          const source = `${state.hostname}/${NAMESPACE}/${TYPE}`;
          const { dir, lock, output } = await init('origin', source, '# no provider_installation: direct from the origin registry\n');
          console.log(`terraform init (origin registry):\n${output}\n.terraform.lock.hcl:\n${lock}`);
          expect(output).toContain(`Installed ${source} v1.3.0 (self-signed, key ID ${state.key.keyId})`);
          const block = parseLockFile(lock).get(source);
          expect(block?.version).toBe('1.3.0');
          expect(block?.constraints).toBe('~> 1.2');
          // terraform records the h1 it computed and the zh of every SHA256SUMS line; our
          // installer (OpenTofu's `packages`: zh and h1 of every platform) must hold all of them.
          const ours = await installFromRegistry(server.origin, request({ ...goPlatform, installDir: join(dir, 'ours') }));
          expect(block!.hashes).toContain(ours.h1);
          expect(block!.hashes.filter((h) => h.startsWith('zh:'))).toHaveLength(PLATFORMS.length);
          for (const hash of block!.hashes) expect(ours.hashes).toContain(hash);
          await access(
            join(
              dir,
              '.terraform',
              'providers',
              state.hostname,
              NAMESPACE,
              TYPE,
              '1.3.0',
              `${goPlatform.os}_${goPlatform.arch}`,
              `terraform-provider-${TYPE}_v1.3.0`,
            ),
            constants.X_OK,
          );
        },
      );

      it.skipIf(missing('terraform', terraform))('installs through provider_installation { network_mirror } and locks the h1 it verified', async () => {
        const source = `${MIRRORED_HOSTNAME}/${NAMESPACE}/${TYPE}`;
        const mirror = `${server.origin}/v1/mirror/`;
        const { dir, lock, output } = await init('mirror', source, `provider_installation {\n  network_mirror {\n    url = "${mirror}"\n  }\n}\n`);
        console.log(`terraform init (network mirror):\n${output}\n.terraform.lock.hcl:\n${lock}`);
        expect(output).toContain(`Installed ${source} v1.3.0 (verified checksum)`);
        const block = parseLockFile(lock).get(source);
        expect(block?.version).toBe('1.3.0');
        const ours = await installFromMirror(
          mirror,
          request({ ...goPlatform, source: { hostname: MIRRORED_HOSTNAME, namespace: NAMESPACE, type: TYPE }, installDir: join(dir, 'ours') }),
        );
        expect(block!.hashes).toContain(ours.h1);
        for (const hash of block!.hashes) expect(ours.hashes).toContain(hash);
        await access(
          join(
            dir,
            '.terraform',
            'providers',
            MIRRORED_HOSTNAME,
            NAMESPACE,
            TYPE,
            '1.3.0',
            `${goPlatform.os}_${goPlatform.arch}`,
            `terraform-provider-${TYPE}_v1.3.0`,
          ),
          constants.X_OK,
        );
      });

      // Real terraform as the oracle for src/protocol/constraints.ts: one init per operator family, in parallel.
      it.skipIf(missing('terraform', terraform))('selects the same version as src/protocol/constraints.ts for every operator family', async () => {
        expect(VERSIONS).toEqual(['1.2.0', '1.2.5', '1.3.0', '1.4.0-beta.1', '2.0.0']);
        const table: [constraint: string, expected: string | null][] = [
          ['= 1.2.5', '1.2.5'],
          ['!= 2.0.0', '1.3.0'],
          ['> 1.3.0, < 2.0.0', null],
          ['>= 1.3.0, < 2.0.0', '1.3.0'],
          ['> 1.2.0', '2.0.0'],
          ['< 1.3.0', '1.2.5'],
          ['<= 1.3.0', '1.3.0'],
          ['~> 1.3', '1.3.0'],
          ['~> 1.2.0', '1.2.5'],
          ['1.4.0-beta.1', '1.4.0-beta.1'],
        ];
        const source = `${state.hostname}/${NAMESPACE}/${TYPE}`;
        const selected = await Promise.all(
          table.map(async ([constraint], i) => {
            try {
              const { lock } = await init(`constraint-${i}`, source, '# the origin registry\n', constraint);
              return parseLockFile(lock).get(source)?.version ?? 'no lock entry';
            } catch (error) {
              return /no available releases match the given constraints/.test(String(error)) ? null : String(error).slice(0, 2000);
            }
          }),
        );
        table.forEach(([constraint, expected], i) => {
          expect(selected[i], `terraform init with version = "${constraint}"`).toBe(expected);
          expect(newestMatching(VERSIONS, parseConstraints(constraint)), `constraints.ts with "${constraint}"`).toBe(expected);
        });
      });
    });
});
