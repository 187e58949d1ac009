import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StaticUpstream, upstreamGpgKey, releaseUpstreamGpgKey } from '../scripts/mirror/upstream';
import { configPath, runScript } from '../scripts/helpers';
import { parseLockFile } from './installer';
import { get, getBytes } from './http';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';
import { missing, terraform } from '../tools';

// The upstream's GnuPG home and agent go with this file.
afterAll(releaseUpstreamGpgKey);

/**
 * Real Terraform against a mirror filled by `npm run mirror`: an upstream
 * registry (node:https, its own CA, GnuPG-signed) → `terraform init` straight
 * from it (the reference lock file) → `terraform providers mirror` (the
 * air-gapped directory) → `mirror sync` into one state and `mirror import`
 * into another → `wrangler dev` over HTTPS serving each → `terraform init`
 * through `network_mirror`, whose lock file must agree with the reference.
 */
const run = promisify(execFile);
const goPlatform = `${process.platform}_${process.arch === 'x64' ? 'amd64' : process.arch}`;
const PLATFORMS = [...new Set([goPlatform, 'darwin_arm64', 'windows_amd64'])];
const NS = 'acme';
const TYPE = 'thing';
const UPSTREAM_NAME = 'upstream.test';

if (!terraform) console.warn('e2e mirror: skipping the terraform tests: no terraform binary in /usr/local/bin or /usr/bin');

describe.skipIf(missing('terraform', terraform))('terraform init through a mirror filled by npm run mirror', () => {
  let root: string;
  let upstream: StaticUpstream;
  let certificate: Certificate;
  let bundle: string;
  let source: string;
  let hostBlock: string;
  const servers: DevServer[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'edge-registry-e2e-mirror-'));
    upstream = await StaticUpstream.start({
      namespace: NS,
      type: TYPE,
      releases: ['1.0.0', '1.1.0', '2.0.0'].map((version) => ({ version, platforms: PLATFORMS })),
    });
    certificate = makeCertificate(root);
    // Terraform (Go) trusts SSL_CERT_FILE: both the upstream's CA and the dev server's certificate.
    bundle = join(root, 'bundle.pem');
    await writeFile(bundle, `${await readFile(upstream.caPath, 'utf8')}\n${certificate.pem}`);
    // Terraform's network-mirror client cannot name a provider whose hostname has a port (it reads
    // "localhost:PORT/…" as a URL scheme), so the upstream is reached as upstream.test through a CLI
    // configuration `host` block — which `npm run mirror` honours as Terraform does.
    source = `${UPSTREAM_NAME}/${NS}/${TYPE}`;
    hostBlock = `host "${UPSTREAM_NAME}" {\n  services = {\n    "providers.v1" = "${upstream.origin}/v1/providers/"\n  }\n}\n`;
  });
  afterAll(async () => {
    for (const server of servers) await server.stop();
    await upstream?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function terraformIn(name: string, args: string[], cliConfig: string): Promise<{ dir: string; output: string }> {
    const dir = join(root, name);
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'main.tf'),
      `terraform {\n  required_providers {\n    thing = {\n      source  = "${source}"\n      version = "~> 1.0"\n    }\n  }\n}\n`,
    );
    await writeFile(join(dir, 'cli.tfrc'), cliConfig);
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      TF_CLI_CONFIG_FILE: join(dir, 'cli.tfrc'),
      SSL_CERT_FILE: bundle,
      CHECKPOINT_DISABLE: '1',
      TF_IN_AUTOMATION: '1',
    };
    try {
      const { stdout, stderr } = await run(terraform!, [...args, '-no-color'], { cwd: dir, env, timeout: 120_000 });
      return { dir, output: stdout + stderr };
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`terraform ${args.join(' ')} failed:\n${stdout}\n${stderr}\n${servers.map((s) => s.log().slice(-2000)).join('\n')}`);
    }
  }

  async function lockOf(dir: string) {
    return parseLockFile(await readFile(join(dir, '.terraform.lock.hcl'), 'utf8')).get(source)!;
  }

  async function initThroughMirror(name: string, stateDir: string): Promise<{ lock: Awaited<ReturnType<typeof lockOf>>; output: string; server: DevServer }> {
    const server = await startDevServer({ stateDir, port: await freePort(), certificate });
    servers.push(server);
    const { dir, output } = await terraformIn(
      name,
      ['init', '-input=false'],
      `provider_installation {\n  network_mirror {\n    url = "${server.origin}/v1/mirror/"\n  }\n}\n`,
    );
    return { lock: await lockOf(dir), output, server };
  }

  it('sync and import each give a mirror that terraform init installs from, locking the same hashes as the upstream', async () => {
    const direct = await terraformIn('direct', ['init', '-input=false'], hostBlock);
    expect(direct.output).toContain(`Installed ${source} v1.1.0 (self-signed, key ID ${(await upstreamGpgKey()).keyId})`);
    const reference = await lockOf(direct.dir);

    // The air-gapped directory, made by terraform itself.
    const platformFlags = PLATFORMS.map((p) => `-platform=${p}`);
    await terraformIn('direct', ['providers', 'mirror', ...platformFlags, join(root, 'carried')], hostBlock);

    const syncState = join(root, 'state-sync');
    await writeFile(join(root, 'sync.tfrc'), hostBlock);
    const synced = await runScript(
      'mirror',
      ['sync', source, '--version', '~> 1.0', ...PLATFORMS.flatMap((p) => ['--platform', p]), '--persist-to', syncState, '--wrangler-config', configPath],
      { NODE_EXTRA_CA_CERTS: upstream.caPath, TF_CLI_CONFIG_FILE: join(root, 'sync.tfrc') },
    );
    expect(synced.code, synced.stderr).toBe(0);

    const importState = join(root, 'state-import');
    const imported = await runScript('mirror', ['import', join(root, 'carried'), '--persist-to', importState, '--wrangler-config', configPath]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toMatch(new RegExp(`${source.replace(/\./g, '\\.')} 1\\.1\\.0: imported`));

    for (const [name, stateDir] of [
      ['via-sync', syncState],
      ['via-import', importState],
    ] as const) {
      const { lock, output, server } = await initThroughMirror(name, stateDir);
      console.log(`terraform init through the mirror (${name}):\n${output}\nlock: ${JSON.stringify(lock)}\nreference: ${JSON.stringify(reference)}`);
      expect(output).toContain(`Installed ${source} v1.1.0 (verified checksum)`);
      expect(lock.version).toBe(reference.version);
      // Terraform 1.11 locks what it can vouch for: from the upstream, the h1 it computed plus the zh of every
      // SHA256SUMS line (signed); from a network mirror, only the h1 it computed ("incomplete lock file
      // information" — it does not take a mirror's word for other platforms). So: the mirror's lock holds the
      // upstream's h1, nothing the upstream's lacks, and the mirror's VERSION.json vouches for exactly the
      // upstream's zh of every platform (and the installed platform's h1).
      for (const hash of lock.hashes) expect(reference.hashes).toContain(hash);
      const h1 = reference.hashes.find((h) => h.startsWith('h1:'))!;
      expect(lock.hashes).toContain(h1);
      const served = JSON.parse((await get(`${server.origin}/v1/mirror/${source}/1.1.0.json`, { ca: certificate.pem })).body.toString('utf8')) as {
        archives: Record<string, { hashes: string[] }>;
      };
      expect(Object.keys(served.archives).sort()).toEqual([...PLATFORMS].sort());
      expect(
        Object.values(served.archives)
          .flatMap((a) => a.hashes.filter((h) => h.startsWith('zh:')))
          .sort(),
      ).toEqual(reference.hashes.filter((h) => h.startsWith('zh:')).sort());
      expect(served.archives[goPlatform]!.hashes).toContain(h1);
    }
  });

  it('keeps the upstream SHA256SUMS and signature beside the archives: GnuPG verifies them with the upstream key, sha256sum -c the archives', async () => {
    const server = servers[0]!; // serving the synced state
    const base = `${server.origin}/v1/archives/${source}/1.1.0`;
    const dir = join(root, 'audit');
    await mkdir(dir, { recursive: true });
    const sums = `terraform-provider-${TYPE}_1.1.0_SHA256SUMS`;
    await writeFile(join(dir, sums), await getBytes(`${base}/${sums}`, { ca: certificate.pem }));
    await writeFile(join(dir, `${sums}.sig`), await getBytes(`${base}/${sums}.sig`, { ca: certificate.pem }));
    for (const p of PLATFORMS) {
      const zip = `terraform-provider-${TYPE}_1.1.0_${p}.zip`;
      await writeFile(join(dir, zip), await getBytes(`${base}/${zip}`, { ca: certificate.pem }));
    }
    const home = join(dir, 'gnupg');
    await mkdir(home, { mode: 0o700 });
    await writeFile(join(dir, 'upstream.asc'), (await upstreamGpgKey()).publicArmor);
    await run('gpg', ['--homedir', home, '--batch', '--import', join(dir, 'upstream.asc')]);
    const verified = await run('gpg', ['--homedir', home, '--batch', '--status-fd', '1', '--verify', join(dir, `${sums}.sig`), join(dir, sums)]);
    await run('gpgconf', ['--homedir', home, '--kill', 'gpg-agent']); // in case gpg started one
    expect(verified.stdout).toContain(`[GNUPG:] VALIDSIG ${(await upstreamGpgKey()).fingerprint}`);
    const checked = await run('sha256sum', ['-c', sums], { cwd: dir });
    expect(checked.stdout.trim().split('\n')).toHaveLength(PLATFORMS.length);
    expect(checked.stdout).not.toContain('FAILED');
  });

  it('answers 404 "not in this mirror" for a provider it does not hold', async () => {
    const server = servers[0]!;
    const response = await get(`${server.origin}/v1/mirror/registry.terraform.io/hashicorp/absent/index.json`, {
      ca: certificate.pem,
      headers: { 'accept-encoding': 'identity' },
    });
    expect(response.status).toBe(404);
    expect(JSON.parse(response.body.toString('utf8'))).toEqual({ errors: ['provider registry.terraform.io/hashicorp/absent is not in this mirror'] });
  });
});
