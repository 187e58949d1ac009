import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { access, constants, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installFromRegistry, parseLockFile } from './installer';
import { MIRRORED_HOSTNAME, NAMESPACE, TYPE, startRegistry, type RunningRegistry } from './fixture';

/**
 * The strongest proof: real `terraform init` against `wrangler dev` over
 * HTTPS, first with this server as the origin registry of
 * localhost:PORT/acme/thing, then as a network_mirror for
 * registry.example.com/acme/thing. Skipped (with the reason printed) where
 * no terraform binary is installed, as in CI.
 */
const run = promisify(execFile);
const terraform = ['/usr/local/bin/terraform', '/usr/bin/terraform'].find((path) => existsSync(path)) ?? findOnPath('terraform');
if (!terraform) console.warn('e2e: skipping the terraform init tests: no terraform binary on this machine (/usr/local/bin or PATH)');
const platform = `${process.platform === 'win32' ? 'windows' : process.platform}_${process.arch === 'x64' ? 'amd64' : process.arch}`;

describe.skipIf(!terraform)('terraform init against wrangler dev over HTTPS', () => {
  let registry: RunningRegistry;

  beforeAll(async () => {
    registry = await startRegistry({ https: true });
  });
  afterAll(async () => {
    await registry?.close();
  });

  /** Runs terraform init in a fresh directory with its own CLI config, trusting only the dev server's certificate. */
  async function init(name: string, source: string, cliConfig: string): Promise<{ dir: string; lock: string; output: string }> {
    const dir = join(registry.root, 'terraform', name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'main.tf'), `terraform {\n  required_providers {\n    thing = {\n      source  = "${source}"\n      version = "~> 1.2"\n    }\n  }\n}\n`);
    await writeFile(join(dir, 'cli.tfrc'), cliConfig);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: dir,
      TF_CLI_CONFIG_FILE: join(dir, 'cli.tfrc'),
      SSL_CERT_FILE: registry.certificate!.certPath,
      CHECKPOINT_DISABLE: '1',
      TF_IN_AUTOMATION: '1',
    };
    try {
      const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color'], { cwd: dir, env, timeout: 90_000 });
      return { dir, lock: await readFile(join(dir, '.terraform.lock.hcl'), 'utf8'), output: stdout + stderr };
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`terraform init failed:\n${stdout}\n${stderr}\n--- wrangler dev ---\n${registry.server.log().slice(-3000)}`);
    }
  }

  it('installs from the origin registry (source = localhost:PORT/acme/thing) and locks every platform', async () => {
    const source = `${registry.hostname}/${NAMESPACE}/${TYPE}`;
    const { dir, lock, output } = await init('origin', source, '# no provider_installation: direct from the origin registry\n');
    console.log(`terraform init (origin registry):\n${output}\n.terraform.lock.hcl:\n${lock}`);
    expect(output).toContain(`Installed ${source} v1.3.0`);
    expect(output).toContain(`key ID ${registry.key.keyId}`);
    const block = parseLockFile(lock).get(source);
    expect(block?.version).toBe('1.3.0');
    expect(block?.constraints).toBe('~> 1.2');
    // What our installer client records (OpenTofu's packages: zh and h1 of every platform)
    // must hold everything terraform recorded: the h1 it computed and the zh of every SHA256SUMS line.
    const ours = await installFromRegistry(registry.server.origin, {
      source: { hostname: registry.hostname, namespace: NAMESPACE, type: TYPE },
      constraints: '~> 1.2', os: platform.split('_')[0]!, arch: platform.split('_')[1]!,
      installDir: join(dir, 'ours'), http: { ca: registry.certificate!.pem },
    });
    expect(block!.hashes).toContain(ours.h1);
    expect(block!.hashes.filter((h) => h.startsWith('zh:'))).toHaveLength(4);
    for (const hash of block!.hashes) expect(ours.hashes).toContain(hash);
    await access(join(dir, '.terraform', 'providers', registry.hostname, NAMESPACE, TYPE, '1.3.0', platform, `terraform-provider-${TYPE}_v1.3.0`), constants.X_OK);
  });

  it('installs through provider_installation { network_mirror } and locks the h1 it verified', async () => {
    const source = `${MIRRORED_HOSTNAME}/${NAMESPACE}/${TYPE}`;
    const mirror = `${registry.server.origin}/v1/mirror/`;
    const { dir, lock, output } = await init('mirror', source, `provider_installation {\n  network_mirror {\n    url = "${mirror}"\n  }\n}\n`);
    console.log(`terraform init (network mirror):\n${output}\n.terraform.lock.hcl:\n${lock}`);
    expect(output).toContain(`Installed ${source} v1.3.0`);
    const block = parseLockFile(lock).get(source);
    expect(block?.version).toBe('1.3.0');
    const ours = await installFromRegistry(registry.server.origin, {
      source: { hostname: registry.hostname, namespace: NAMESPACE, type: TYPE },
      constraints: '~> 1.2', os: platform.split('_')[0]!, arch: platform.split('_')[1]!,
      installDir: join(dir, 'ours'), http: { ca: registry.certificate!.pem },
    });
    expect(block!.hashes).toContain(ours.h1);
    for (const hash of block!.hashes) expect(ours.hashes).toContain(hash);
    await access(join(dir, '.terraform', 'providers', MIRRORED_HOSTNAME, NAMESPACE, TYPE, '1.3.0', platform, `terraform-provider-${TYPE}_v1.3.0`), constants.X_OK);
  });
});

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}
