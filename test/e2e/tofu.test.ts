import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig } from '../../scripts/lib/config';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { writeDemoModule } from '../../scripts/lib/demo/module';
import { publishModule } from '../../scripts/lib/module/publish';
import { h1Hash } from '../../src/protocol/hashes';
import { parseLockFile } from './installer';
import { publishIntoState } from './local-publish';
import { generateRelease, generateSigningKey, zipDigests, type GeneratedRelease, type SigningKeyPair } from './release';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';
import { ensureTofu, runTofu, type TofuRun } from './tofu/tofu';
import { missing, onPath } from '../tools';

/**
 * A REAL OpenTofu (1.6.2, test/tofu/, docs/opentofu.md) against the registry
 * under `wrangler dev` over HTTPS: `tofu init` from the registry (a
 * constraint, the signature verified, a lock file with every platform's zh:
 * and h1: — OpenTofu reads the download document's `packages`), through the
 * network mirror, a module and its submodule, `tofu providers lock` for
 * several platforms, and private mode with a credentials block (refused
 * without one and out of scope). `tofu login` is in sign-in/sign-in.test.ts,
 * beside `terraform login`. One public and one private server for the file;
 * independent tofu runs run at once.
 */
const execute = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

/** Dotted names, as OpenTofu wants for modules; the CLI configuration's `host` blocks point them at the server. */
const HOST = 'registry.example.com';
const UPSTREAM = 'upstream.example.com';
const VERSIONS = ['1.2.0', '1.3.0', '2.0.0'];
const PLATFORMS = ['linux_amd64', 'linux_arm64', 'darwin_arm64', 'windows_amd64'];
const MODULE_VERSIONS = ['1.0.0', '2.0.0', '2.1.0', '3.0.0'];
const SECRET = 'e2e-tofu-signing-secret-0123456789abcdef';

let dir: string;
let certificate: Certificate;
let key: SigningKeyPair;
let releases: GeneratedRelease[];
let publicServer: DevServer;
let privateServer: DevServer;
const tokens = { acme: '', other: '', both: '' };

/**
 * What OpenTofu 1.6.2 locks for `version`, computed here from the generated zips: the zh: of every platform
 * (SHA256SUMS, signature checked) and the h1: of each platform in `h1Platforms` (the zips it fetched and hashed).
 * 1.6.2 does not read the download document's `packages` (measured: its lock lacks the other platforms' h1:).
 */
async function expectedHashes(version: string, h1Platforms: readonly string[]): Promise<string[]> {
  const release = releases.find((r) => r.version === version)!;
  const hashes: string[] = [];
  for (const platform of PLATFORMS) {
    const zip = await readFile(release.archives.get(platform)!);
    hashes.push(`zh:${createHash('sha256').update(zip).digest('hex')}`);
    if (h1Platforms.includes(platform)) hashes.push(h1Hash(await zipDigests(zip)));
  }
  return hashes.sort();
}

async function publishState(stateDir: string): Promise<void> {
  await publishIntoState(stateDir, HOST, 'acme', releases, key);
  // The mirror's own copy of an upstream provider (as `npm run mirror` stores it): another hostname.
  await publishIntoState(stateDir, UPSTREAM, 'acme', releases, key);
  const config = await readRegistryConfig({ configPath: join(root, 'wrangler.toml'), persistTo: stateDir });
  const store = await openLocalStore(config);
  try {
    for (const version of MODULE_VERSIONS) {
      const tree = join(dir, 'trees', version);
      writeDemoModule(tree, version);
      await publishModule({ path: tree, namespace: 'acme', name: 'vpc', system: 'aws', version, hostname: HOST, store, config });
    }
  } finally {
    await store.close();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-registry-tofu-e2e-'));
  certificate = makeCertificate(dir);
  key = await generateSigningKey();
  releases = [];
  for (const version of VERSIONS) releases.push(await generateRelease(join(dir, 'dist', version), 'thing', version, PLATFORMS, key));
  const publicState = join(dir, 'public-state');
  const privateState = join(dir, 'private-state');
  await Promise.all([ensureTofu(), publishState(publicState)]);
  await cp(publicState, privateState, { recursive: true });
  const token = async (...args: string[]) =>
    (await execute(tsx, ['scripts/token.ts', 'create', ...args, '--persist-to', privateState], { cwd: root })).stdout.trimEnd().split('\n').at(-1)!;
  tokens.acme = await token('--namespace', 'acme', '--name', 'acme-ci');
  // acme's own providers and modules, and the mirror's copy of upstream.example.com/acme/thing.
  tokens.both = await token('--namespace', 'acme', '--namespace', `${UPSTREAM}/acme`, '--name', 'acme-and-upstream');
  tokens.other = await token('--namespace', 'other', '--name', 'other-ci');
  [publicServer, privateServer] = await Promise.all([
    startDevServer({ stateDir: publicState, port: await freePort(), certificate, vars: { REGISTRY_HOSTNAME: HOST, GZIP_DOCUMENTS: 'true' } }),
    startDevServer({
      stateDir: privateState,
      port: await freePort(),
      certificate,
      vars: { REGISTRY_HOSTNAME: HOST, ACCESS: 'private', URL_SIGNING_SECRET: SECRET },
    }),
  ]);
}, 300_000);
afterAll(async () => {
  await Promise.all([publicServer?.stop(), privateServer?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** CLI configuration sending HOST's providers.v1 and modules.v1 to `server` (service discovery override). */
const hostBlock = (server: DevServer) =>
  `host "${HOST}" {\n  services = {\n    "providers.v1" = "${server.origin}/v1/providers/"\n    "modules.v1"   = "${server.origin}/v1/modules/"\n  }\n}\n`;
const mirrorBlock = (server: DevServer) => `provider_installation {\n  network_mirror {\n    url = "${server.origin}/v1/mirror/"\n  }\n}\n`;
const credentials = (token: string) => `credentials "${HOST}" {\n  token = "${token}"\n}\n`;

const providerTf = (source: string, constraint: string) =>
  `terraform {\n  required_providers {\n    thing = {\n      source  = "${source}"\n      version = "${constraint}"\n    }\n  }\n}\n`;
const moduleTf = `module "vpc" {
  source  = "${HOST}/acme/vpc/aws"
  version = "~> 2.0"
  name    = "main"
}

module "subnet" {
  source  = "${HOST}/acme/vpc/aws//modules/subnet"
  version = "~> 2.0"
  name    = "a"
  cidr    = "10.0.1.0/24"
}
`;

/** A fresh directory with `files` (main.tf, cli.tfrc); runs `tofu ARGS` in it. */
async function tofuIn(name: string, files: Record<string, string>, args: string[]): Promise<TofuRun & { work: string }> {
  const work = join(dir, 'tofu', name);
  await mkdir(work, { recursive: true });
  for (const [file, text] of Object.entries({ 'cli.tfrc': '', ...files })) await writeFile(join(work, file), text);
  return { ...(await runTofu(work, args, certificate.certPath)), work };
}
const init = (name: string, files: Record<string, string>) => tofuIn(name, files, ['init', '-input=false', '-backend=false']);
const lockOf = async (work: string) => parseLockFile(await readFile(join(work, '.terraform.lock.hcl'), 'utf8'));
const modulesOf = async (work: string) =>
  (
    JSON.parse(await readFile(join(work, '.terraform', 'modules', 'modules.json'), 'utf8')) as {
      Modules: { Key: string; Source?: string; Version?: string; Dir: string }[];
    }
  ).Modules;
const hideTokens = (text: string) => text.replaceAll(/ert_[A-Za-z0-9_-]{43}/g, 'ert_…');

describe('OpenTofu 1.6.2 against the registry (public)', () => {
  it('tofu version is the pinned OpenTofu', async () => {
    const version = await tofuIn('version', {}, ['version']);
    expect(version.output).toContain('OpenTofu v1.6.2');
  });

  it('tofu init: the registry (~> 1.2, signature verified, every platform locked), the network mirror and a module with its submodule, at once', async () => {
    const [registry, mirror, modules] = await Promise.all([
      init('registry', { 'main.tf': providerTf(`${HOST}/acme/thing`, '~> 1.2'), 'cli.tfrc': hostBlock(publicServer) }),
      init('mirror', { 'main.tf': providerTf(`${UPSTREAM}/acme/thing`, '>= 1.2, < 2.0.0'), 'cli.tfrc': mirrorBlock(publicServer) }),
      init('modules', { 'main.tf': moduleTf, 'cli.tfrc': hostBlock(publicServer) }),
    ]);
    console.log(
      `--- tofu init (registry) ---\n${registry.output}\n--- tofu init (network mirror) ---\n${mirror.output}\n--- tofu init (modules) ---\n${modules.output}`,
    );
    expect(registry.ok, registry.output + publicServer.log().slice(-2000)).toBe(true);
    expect(registry.output).toContain(`Installed ${HOST}/acme/thing v1.3.0 (signed, key ID ${key.keyId})`);
    // Every platform's zh: (the signed SHA256SUMS) and this platform's h1:.
    const lock = (await lockOf(registry.work)).get(`${HOST}/acme/thing`);
    expect(lock).toEqual({ version: '1.3.0', constraints: '~> 1.2', hashes: await expectedHashes('1.3.0', ['linux_amd64']) });
    expect(existsSync(join(registry.work, '.terraform', 'providers', HOST, 'acme', 'thing', '1.3.0', 'linux_amd64', 'terraform-provider-thing_v1.3.0'))).toBe(
      true,
    );

    expect(mirror.ok, mirror.output).toBe(true);
    expect(mirror.output).toContain(`Installed ${UPSTREAM}/acme/thing v1.3.0 (verified checksum)`);
    const mirrored = (await lockOf(mirror.work)).get(`${UPSTREAM}/acme/thing`);
    expect(mirrored?.version).toBe('1.3.0');
    // Through a mirror OpenTofu (as Terraform) locks only the h1: it verified on the zip it installed.
    expect(mirrored?.hashes).toEqual((await expectedHashes('1.3.0', ['linux_amd64'])).filter((hash) => hash.startsWith('h1:')));

    expect(modules.ok, modules.output).toBe(true);
    const installed = await modulesOf(modules.work);
    const vpc = installed.find((m) => m.Key === 'vpc')!;
    const subnet = installed.find((m) => m.Key === 'subnet')!;
    expect(vpc).toMatchObject({ Source: `${HOST}/acme/vpc/aws`, Version: '2.1.0' });
    expect(subnet).toMatchObject({ Source: `${HOST}/acme/vpc/aws//modules/subnet`, Version: '2.1.0' });
    expect(await readFile(join(modules.work, vpc.Dir, 'main.tf'), 'utf8')).toContain('value       = "2.1.0"');
    expect(await readFile(join(modules.work, subnet.Dir, 'main.tf'), 'utf8')).toContain('variable "cidr"');
  });

  it("tofu providers lock for three platforms records each one's h1: beside every zh:", async () => {
    const platforms = ['linux_amd64', 'darwin_arm64', 'windows_amd64'];
    const lock = await tofuIn('lock', { 'main.tf': providerTf(`${HOST}/acme/thing`, '2.0.0'), 'cli.tfrc': hostBlock(publicServer) }, [
      'providers',
      'lock',
      ...platforms.map((p) => `-platform=${p}`),
    ]);
    console.log(`--- tofu providers lock ---\n${lock.output}`);
    expect(lock.ok, lock.output).toBe(true);
    const block = (await lockOf(lock.work)).get(`${HOST}/acme/thing`);
    expect(block?.version).toBe('2.0.0');
    // Each asked platform's h1: (its zip fetched and hashed), every platform's zh:.
    expect(block?.hashes).toEqual(await expectedHashes('2.0.0', platforms));
  });
});

describe('OpenTofu 1.6.2 against the registry in private mode', () => {
  it('tofu init with a credentials block installs the provider and the modules; without one, or out of scope, it is refused', async () => {
    const both = `${providerTf(`${HOST}/acme/thing`, '~> 1.2')}\n${moduleTf}`;
    const [ok, none, scope] = await Promise.all([
      init('private-ok', { 'main.tf': both, 'cli.tfrc': hostBlock(privateServer) + credentials(tokens.acme) }),
      init('private-none', { 'main.tf': moduleTf, 'cli.tfrc': hostBlock(privateServer) }),
      init('private-scope', { 'main.tf': providerTf(`${HOST}/acme/thing`, '~> 1.2'), 'cli.tfrc': hostBlock(privateServer) + credentials(tokens.other) }),
    ]);
    console.log(
      `--- tofu init (private, acme token) ---\n${hideTokens(ok.output)}\n--- no token ---\n${none.output}\n--- out of scope ---\n${hideTokens(scope.output)}`,
    );
    expect(ok.ok, hideTokens(ok.output)).toBe(true);
    expect(ok.output).toContain(`Installed ${HOST}/acme/thing v1.3.0 (signed, key ID ${key.keyId})`);
    expect((await lockOf(ok.work)).get(`${HOST}/acme/thing`)?.hashes).toEqual(await expectedHashes('1.3.0', ['linux_amd64']));
    const installed = await modulesOf(ok.work);
    expect(installed.find((m) => m.Key === 'vpc')?.Version).toBe('2.1.0');
    expect(installed.find((m) => m.Key === 'subnet')?.Version).toBe('2.1.0');

    expect(none.ok).toBe(false);
    expect(none.output.replace(/\s+/g, ' ')).toMatch(/401|requires authentication|Unauthorized/i);
    expect(scope.ok).toBe(false);
    expect(scope.output.replace(/\s+/g, ' ')).toMatch(/403|rejected the given authentication credentials|Forbidden/i);
  });
});

/**
 * The OCI view (/v2/, docs/oci.md) through an independent client: Debian's skopeo (containers/image, not
 * oras-go) inspects and copies a provider version, the mirror's upstream provider and a module, public and
 * private (--src-creds with a read token: the Bearer challenge and token endpoint), trusting the run's
 * certificate (--src-cert-dir). Every copied zip layer is then checked against the release's SHA256SUMS.
 */
const skopeo = onPath('skopeo');
describe.skipIf(missing('skopeo', skopeo))('the OCI view with skopeo (public and private)', () => {
  async function runSkopeo(args: string[]): Promise<{ ok: boolean; output: string; stdout: string }> {
    const home = join(dir, 'skopeo-home');
    await mkdir(join(home, 'certs'), { recursive: true });
    await mkdir(join(dir, 'oci'), { recursive: true });
    await writeFile(join(home, 'certs', 'ca.crt'), certificate.pem);
    await writeFile(join(home, 'policy.json'), JSON.stringify({ default: [{ type: 'insecureAcceptAnything' }] }));
    await writeFile(join(home, 'registries.conf'), '');
    const env = { PATH: process.env.PATH, HOME: home, REGISTRY_AUTH_FILE: join(home, 'auth.json'), CONTAINERS_REGISTRIES_CONF: join(home, 'registries.conf') };
    try {
      const { stdout, stderr } = await execute(skopeo!, ['--policy', join(home, 'policy.json'), ...args], { env, timeout: 120_000, maxBuffer: 64 << 20 });
      return { ok: true, output: stdout + stderr, stdout };
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      return { ok: false, output: `${stdout ?? ''}${stderr ?? ''}${String(error)}`, stdout: stdout ?? '' };
    }
  }
  const certDir = () => join(dir, 'skopeo-home', 'certs');
  const image = (server: DevServer, repository: string, tag: string) => `docker://localhost:${server.port}/${repository}:${tag}`;

  /** Every layer (archive/zip) of an OCI layout's manifests, with its blob file's SHA-256 computed here. */
  async function layersOf(layout: string): Promise<{ digest: string; sha256: string; title: string; mediaType: string }[]> {
    const blob = (digest: string) => join(layout, 'blobs', 'sha256', digest.slice('sha256:'.length));
    const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string; mediaType: string }[] };
    const layers: { digest: string; sha256: string; title: string; mediaType: string }[] = [];
    const visit = async (digest: string): Promise<void> => {
      const document = JSON.parse(await readFile(blob(digest), 'utf8')) as {
        manifests?: { digest: string }[];
        layers?: { digest: string; mediaType: string; annotations?: Record<string, string> }[];
      };
      for (const entry of document.manifests ?? []) await visit(entry.digest);
      for (const layer of document.layers ?? []) {
        const sha256 = createHash('sha256')
          .update(await readFile(blob(layer.digest)))
          .digest('hex');
        layers.push({ digest: layer.digest, sha256, title: layer.annotations?.['org.opencontainers.image.title'] ?? '', mediaType: layer.mediaType });
      }
    };
    for (const entry of index.manifests) await visit(entry.digest);
    return layers;
  }

  /** The SHA256SUMS lines (hex → file name) of a generated release. */
  async function shasums(version: string): Promise<Map<string, string>> {
    const text = await readFile(releases.find((r) => r.version === version)!.shasumsPath, 'utf8');
    return new Map(
      text
        .trimEnd()
        .split('\n')
        .map((line) => line.split(/\s+/) as [string, string]),
    );
  }

  it('skopeo inspect --raw shows the stored index; skopeo copy --all of a provider, a mirrored upstream provider and a module; every layer verifies', async () => {
    const provider = image(publicServer, `providers/${HOST}/acme/thing`, '1.3.0');
    const [raw, tags] = await Promise.all([
      runSkopeo(['inspect', '--raw', '--tls-verify=true', '--cert-dir', certDir(), provider]),
      runSkopeo(['list-tags', '--cert-dir', certDir(), `docker://localhost:${publicServer.port}/providers/${HOST}/acme/thing`]),
    ]);
    console.log(`--- skopeo inspect --raw ${provider} ---\n${raw.output}\n--- skopeo list-tags ---\n${tags.output}`);
    expect(raw.ok, raw.output).toBe(true);
    const index = JSON.parse(raw.stdout) as { mediaType: string; artifactType: string; manifests: { platform: { os: string; architecture: string } }[] };
    expect(index.mediaType).toBe('application/vnd.oci.image.index.v1+json');
    expect(index.artifactType).toBe('application/vnd.opentofu.provider');
    expect(index.manifests.map((m) => `${m.platform.os}_${m.platform.architecture}`).sort()).toEqual([...PLATFORMS].sort());
    expect(tags.ok, tags.output).toBe(true);
    expect((JSON.parse(tags.stdout) as { Tags: string[] }).Tags).toEqual(VERSIONS);

    const copies = [
      { source: provider, layout: join(dir, 'oci', 'provider'), version: '1.3.0' },
      { source: image(publicServer, `providers/${UPSTREAM}/acme/thing`, '2.0.0'), layout: join(dir, 'oci', 'upstream'), version: '2.0.0' },
    ];
    const moduleLayout = join(dir, 'oci', 'module');
    const results = await Promise.all([
      ...copies.map((c) => runSkopeo(['copy', '--all', '--src-cert-dir', certDir(), c.source, `oci:${c.layout}:${c.version}`])),
      runSkopeo(['copy', '--src-cert-dir', certDir(), image(publicServer, 'modules/acme/vpc/aws', '2.1.0'), `oci:${moduleLayout}:2.1.0`]),
    ]);
    for (const result of results) {
      console.log(`--- skopeo copy ---\n${result.output}`);
      expect(result.ok, result.output).toBe(true);
    }
    for (const copy of copies) {
      const layers = await layersOf(copy.layout);
      const sums = await shasums(copy.version);
      expect(layers).toHaveLength(PLATFORMS.length);
      for (const layer of layers) {
        expect(layer.mediaType).toBe('archive/zip');
        expect(layer.digest).toBe(`sha256:${layer.sha256}`);
        expect(sums.get(layer.sha256), `${copy.source}: ${layer.title}`).toBe(layer.title);
      }
    }
    const [moduleLayer] = await layersOf(moduleLayout);
    expect(moduleLayer).toMatchObject({ mediaType: 'archive/zip', title: 'vpc-aws-2.1.0.zip', digest: `sha256:${moduleLayer!.sha256}` });
    // An independent zip reader (Debian's unzip) lists the module and its submodule.
    const { stdout: listing } = await execute('unzip', ['-l', join(moduleLayout, 'blobs', 'sha256', moduleLayer!.sha256)]);
    expect(listing).toContain('main.tf');
    expect(listing).toContain('modules/subnet/main.tf');
    const { stdout: tested } = await execute('unzip', ['-t', join(moduleLayout, 'blobs', 'sha256', moduleLayer!.sha256)]);
    expect(tested).toContain('No errors detected');
  });

  it('private mode: skopeo with --src-creds (a read token) copies a provider, the mirrored upstream provider and a module; without, or out of scope, it is refused', async () => {
    const provider = image(privateServer, `providers/${HOST}/acme/thing`, '1.3.0');
    const creds = ['--src-creds', `token:${tokens.both}`];
    const copies = [
      { source: provider, layout: join(dir, 'oci', 'private-provider'), version: '1.3.0' },
      { source: image(privateServer, `providers/${UPSTREAM}/acme/thing`, '2.0.0'), layout: join(dir, 'oci', 'private-upstream'), version: '2.0.0' },
    ];
    const moduleLayout = join(dir, 'oci', 'private-module');
    const [okProvider, okUpstream, okModule, none, scope, upstreamScope] = await Promise.all([
      ...copies.map((c) => runSkopeo(['copy', '--all', '--src-cert-dir', certDir(), ...creds, c.source, `oci:${c.layout}:${c.version}`])),
      runSkopeo(['copy', '--src-cert-dir', certDir(), ...creds, image(privateServer, 'modules/acme/vpc/aws', '2.1.0'), `oci:${moduleLayout}:2.1.0`]),
      runSkopeo(['inspect', '--raw', '--cert-dir', certDir(), provider]),
      runSkopeo(['inspect', '--raw', '--cert-dir', certDir(), '--creds', `token:${tokens.other}`, provider]),
      // A bare namespace scope covers this registry's hostname only, not the mirror's upstream one.
      runSkopeo(['inspect', '--raw', '--cert-dir', certDir(), '--creds', `token:${tokens.acme}`, copies[1]!.source]),
    ]);
    for (const result of [okProvider, okUpstream, okModule]) {
      console.log(`--- skopeo copy (private, --src-creds) ---\n${hideTokens(result!.output)}`);
      expect(result!.ok, hideTokens(result!.output)).toBe(true);
    }
    console.log(
      `--- no credentials ---\n${none!.output}\n--- out of scope ---\n${hideTokens(scope!.output)}\n--- upstream, acme-only token ---\n${hideTokens(upstreamScope!.output)}`,
    );
    for (const copy of copies) {
      const sums = await shasums(copy.version);
      const layers = await layersOf(copy.layout);
      expect(layers).toHaveLength(PLATFORMS.length);
      for (const layer of layers) expect(sums.get(layer.sha256), `${copy.source}: ${layer.title}`).toBe(layer.title);
    }
    const [moduleLayer] = await layersOf(moduleLayout);
    expect(moduleLayer).toMatchObject({ mediaType: 'archive/zip', title: 'vpc-aws-2.1.0.zip' });
    expect(none!.ok).toBe(false);
    expect(none!.output).toMatch(/unauthorized|authentication required/i);
    for (const refused of [scope!, upstreamScope!]) {
      expect(refused.ok).toBe(false);
      expect(hideTokens(refused.output)).toMatch(/denied|403|unauthorized/i);
    }
  });
});
