import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configPath, runScript } from '../scripts/helpers';
import { get, type HttpResponse } from './http';
import { ModuleUpstream, moduleFiles, type UpstreamModule } from './module-upstream';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';
import { terraformInit, type InitResult } from './terraform-init';
import { missing, terraform } from '../tools';

/**
 * The module proxy as a user meets it: a policy file that maps our
 * namespace `terraform-aws-modules` to an upstream registry
 * (`npm run mirror -- policy set`), an EMPTY registry under `wrangler dev`
 * over HTTPS, and a real `terraform init` of
 * `registry.example.com/terraform-aws-modules/vpc/aws` through a CLI `host`
 * block. The upstream (test/e2e/module-upstream.ts, plain HTTP on loopback
 * reached through the policy's `hosts`) answers with GitHub sources
 * (`git::https://github.com/…?ref=`, `github.com/…?ref=`) whose tarballs a
 * stand-in for GitHub's archive endpoint serves, an HTTPS zip, and hostile
 * packages.
 */
if (!terraform) console.warn('e2e module-proxy: skipping: no terraform binary in /usr/local/bin or /usr/bin');

const HOST = 'registry.example.com';
const UPSTREAM = 'registry.upstream.test';
const NS = 'terraform-aws-modules';
const gh = (ref: string) => `git::https://github.com/${NS}/terraform-aws-vpc.git?ref=${ref}`;
const MODULES: UpstreamModule[] = [
  {
    namespace: NS,
    name: 'vpc',
    system: 'aws',
    versions: [
      { version: '1.0.0', source: gh('v1.0.0') },
      { version: '1.1.0', source: `github.com/${NS}/terraform-aws-vpc?ref=v1.1.0` },
      { version: '2.0.0', source: gh('v2.0.0') },
    ],
  },
  { namespace: NS, name: 'zipped', system: 'aws', versions: [{ version: '1.0.0', source: 'https://downloads.upstream.test/zipped-1.0.0.zip' }] },
  // Asked for only through the OCI view (/v2/): its first OCI request proxies it.
  { namespace: NS, name: 'oci', system: 'aws', versions: [{ version: '1.0.0', source: gh('o1.0.0') }] },
  {
    namespace: NS,
    name: 'hostile',
    system: 'aws',
    versions: [
      { version: '1.0.1', source: gh('h1.0.1'), defect: 'archive-500' },
      { version: '1.0.2', source: gh('h1.0.2'), defect: 'hang' },
      { version: '1.0.3', source: gh('h1.0.3'), defect: 'oversize' },
      { version: '1.0.4', source: gh('h1.0.4'), defect: 'not-gzip' },
      { version: '1.0.5', source: 's3::https://s3-eu-west-1.amazonaws.com/acme-modules/hostile.zip' },
      { version: '1.0.6', source: 'git::https://gitlab.com/acme/hostile.git?ref=v1.0.6' },
      { version: '1.0.7', source: gh('h1.0.7'), defect: 'no-tf' },
    ],
  },
];
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function tarNames(gz: Buffer): Promise<string[]> {
  const extract = tar.extract();
  const names: string[] = [];
  extract.on('entry', (header, stream, next) => {
    names.push(header.name);
    stream.on('end', next);
    stream.resume();
  });
  const done = new Promise<void>((resolve, reject) => {
    extract.on('finish', () => resolve());
    extract.on('error', reject);
  });
  extract.end(gunzipSync(gz));
  await done;
  return names;
}

describe.skipIf(missing('terraform', terraform))('module proxy: terraform init of an upstream registry module through us', () => {
  let root: string;
  let state: string;
  let upstream: ModuleUpstream;
  let certificate: Certificate;
  let server: DevServer;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'edge-registry-e2e-module-proxy-'));
    state = join(root, 'state');
    upstream = await ModuleUpstream.start(MODULES);
    await writeFile(
      join(root, 'policy.json'),
      JSON.stringify({
        modules: [{ source: `${UPSTREAM}/${NS}/*/*`, versions: '~> 1.0' }],
        hosts: {
          [UPSTREAM]: { 'modules.v1': `${upstream.origin}/v1/modules/` },
          'codeload.github.com': { archives: `${upstream.origin}/codeload/` },
          'downloads.upstream.test': { archives: `${upstream.origin}/files/` },
        },
      }),
    );
    const set = await runScript('mirror', ['policy', 'set', join(root, 'policy.json'), '--persist-to', state, '--wrangler-config', configPath]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr + set.stdout).toContain('1 module rule');
    certificate = makeCertificate(root);
    server = await startDevServer({
      stateDir: state,
      port: await freePort(),
      certificate,
      vars: { PULL_TIMEOUT_SECONDS: '6', PULL_LIST_SECONDS: '2', MODULE_PROXY_MAX_MB: '1' },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await upstream?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const at = (path: string, headers: Record<string, string> = {}) =>
    get(`${server.origin}${path}`, { ca: certificate.pem, headers: { 'accept-encoding': 'identity', ...headers } });
  const errorOf = (response: HttpResponse) => (JSON.parse(response.body.toString('utf8')) as { errors: string[] }).errors[0]!;
  const versionsOf = (response: HttpResponse) =>
    (JSON.parse(response.body.toString('utf8')) as { modules: { versions: { version: string }[] }[] }).modules[0]!.versions.map((v) => v.version);
  const auditEntries = async () => {
    const listed = await runScript('audit', ['--json', '--persist-to', state, '--config', configPath]);
    expect(listed.code, listed.stderr).toBe(0);
    return (JSON.parse(listed.stdout) as { entries: { action: string; target: string; outcome: string; reason?: string; digests?: Record<string, string> }[] })
      .entries;
  };

  async function initModules(name: string, version: string, origin = server.origin): Promise<InitResult & { work: string }> {
    const work = join(root, name);
    await mkdir(work, { recursive: true });
    await writeFile(
      join(work, 'main.tf'),
      `module "vpc" {\n  source  = "${HOST}/${NS}/vpc/aws"\n  version = "${version}"\n  name    = "main"\n}\n\nmodule "subnet" {\n  source  = "${HOST}/${NS}/vpc/aws//modules/subnet"\n  version = "${version}"\n  cidr    = "10.0.1.0/24"\n}\n`,
    );
    await writeFile(join(work, 'cli.tfrc'), `host "${HOST}" {\n  services = {\n    "modules.v1" = "${origin}/v1/modules/"\n  }\n}\n`);
    return { ...(await terraformInit(work, certificate.certPath)), work };
  }

  it("the first init installs the newest allowed version from the upstream's GitHub source; the package is stored as ours", async () => {
    const first = await initModules('cold', '~> 1.0');
    expect(first.ok, `${first.output}\n${server.log().slice(-3000)}`).toBe(true);
    const vpc = first.modules.find((m) => m.Key === 'vpc')!;
    const subnet = first.modules.find((m) => m.Key === 'subnet')!;
    expect(vpc.Version).toBe('1.1.0');
    expect(subnet.Version).toBe('1.1.0');
    // GitHub's top-level directory is gone: the repository root is the module root, and //modules/subnet resolves in it.
    expect(await readFile(join(first.work, vpc.Dir, 'main.tf'), 'utf8')).toBe(moduleFiles('vpc', '1.1.0')['main.tf']);
    expect(await readFile(join(first.work, subnet.Dir, 'main.tf'), 'utf8')).toBe(moduleFiles('vpc', '1.1.0')['modules/subnet/main.tf']);
    // The symlink became the bytes it pointed to.
    expect(await readFile(join(first.work, vpc.Dir, 'LICENSE.link'), 'utf8')).toBe(moduleFiles('vpc', '1.1.0')['README.md']);
    expect(upstream.count('/codeload/terraform-aws-modules/terraform-aws-vpc/tar.gz/v1.1.0')).toBe(1);

    // Served from us: a package of ours, deterministic (sorted, no top-level directory), with the audit entry's digest.
    const download = await at(`/v1/modules/${NS}/vpc/aws/1.1.0/download`);
    expect(download.status).toBe(204);
    const location = String(download.headers['x-terraform-get']);
    expect(location).toBe(`/v1/module-archives/${HOST}/${NS}/vpc/aws/1.1.0/vpc-aws-1.1.0.tar.gz`);
    const archive = (await at(location)).body;
    const names = await tarNames(archive);
    expect(names).toEqual([...names].sort());
    expect(names).toContain('main.tf');
    expect(names).toContain('modules/subnet/main.tf');
    const entries = (await auditEntries()).filter((e) => e.action === 'module.proxy' && e.target === `${HOST}/${NS}/vpc/aws 1.1.0`);
    expect(entries).toEqual([expect.objectContaining({ outcome: 'ok', digests: { 'vpc-aws-1.1.0.tar.gz': sha256(archive) } })]);
    // Docs for the pages, read from the package.
    // Lists and pages are fresh within INDEX_CACHE_SECONDS (5 s here).
    let page = '';
    for (let waited = 0; waited < 15_000 && !page.includes('Name of the vpc'); waited += 500) {
      if (waited) await new Promise((resolve) => setTimeout(resolve, 500));
      page = (await at(`/modules/${NS}/vpc/aws/1.1.0`)).body.toString('utf8');
    }
    expect(page).toContain('Name of the vpc');
    expect(page).toContain('<h1>vpc 1.1.0</h1>'); // the README rendered…
    expect(page).toContain('<p>Proxied module.</p>'); // …its own HTML reduced to its text
    expect(page).not.toContain('alert(1)');
  });

  it("versions list the held and the upstream's allowed versions; outside the policy is refused with a 4xx naming why", async () => {
    expect(versionsOf(await at(`/v1/modules/${NS}/vpc/aws/versions`))).toEqual(['1.1.0', '1.0.0']);
    const outside = await at(`/v1/modules/${NS}/vpc/aws/2.0.0/download`);
    expect(outside.status).toBe(404);
    expect(errorOf(outside)).toBe(`module ${HOST}/${NS}/vpc/aws has no version 2.0.0, and the proxy policy does not allow it from ${UPSTREAM}/${NS}/vpc/aws`);
    const init = await initModules('outside', '2.0.0');
    expect(init.ok).toBe(false);
    expect(init.output.replace(/\s+/g, ' ')).toMatch(/no available releases match the given constraints 2\.0\.0|Unresolvable module version/);
    const before = upstream.requests.length;
    const elsewhere = await at('/v1/modules/other-ns/vpc/aws/versions');
    expect(elsewhere.status).toBe(404);
    expect(upstream.requests.length).toBe(before); // a namespace the policy does not proxy never reaches the upstream
    expect(upstream.count('v2.0.0')).toBe(0);
  });

  it('an OCI request proxies a module as a /v1/ download does; the tar.gz stored is served as a zip made once', async () => {
    const repo = `/v2/modules/${NS}/oci/aws`;
    expect(JSON.parse((await at(`${repo}/tags/list`)).body.toString('utf8'))).toEqual({ name: `modules/${NS}/oci/aws`, tags: ['1.0.0'] });
    expect(upstream.count('tar.gz/o1.0.0')).toBe(0);
    const first = await at(`${repo}/manifests/1.0.0`);
    expect(first.status, first.body.toString('utf8')).toBe(200);
    expect(upstream.count('tar.gz/o1.0.0')).toBe(1);
    const manifest = JSON.parse(first.body.toString('utf8')) as { artifactType: string; layers: { mediaType: string; digest: string }[] };
    expect(manifest.artifactType).toBe('application/vnd.opentofu.modulepkg');
    expect(manifest.layers.map((l) => l.mediaType)).toEqual(['archive/zip']);
    const zip = (await at(`${repo}/blobs/${manifest.layers[0]!.digest}`)).body;
    expect(`sha256:${sha256(zip)}`).toBe(manifest.layers[0]!.digest);
    const zipPath = join(root, 'oci-module.zip');
    await writeFile(zipPath, zip);
    const { stdout } = await promisify(execFile)('unzip', ['-l', zipPath]);
    expect(stdout).toContain('modules/subnet/main.tf');
    // Held now: the same stored bytes again, no second upstream fetch; and modules.v1 serves the version too.
    const again = await at(`${repo}/manifests/1.0.0`);
    expect(again.headers['docker-content-digest']).toBe(first.headers['docker-content-digest']);
    expect(upstream.count('tar.gz/o1.0.0')).toBe(1);
    expect((await at(`/v1/modules/${NS}/oci/aws/1.0.0/download`)).status).toBe(204);
  });

  it("an HTTPS zip source is fetched (through the policy's archives override) and stored as a .tar.gz of ours", async () => {
    const download = await at(`/v1/modules/${NS}/zipped/aws/1.0.0/download`);
    expect(download.status, download.body.toString()).toBe(204);
    const names = await tarNames((await at(String(download.headers['x-terraform-get']))).body);
    expect(names).toEqual(['README.md', 'examples/simple/main.tf', 'main.tf', 'modules/subnet/main.tf']);
    expect(upstream.count('/files/zipped-1.0.0.zip')).toBe(1);
  });

  describe('hostile upstream: nothing stored, a clear error, a later request retries', () => {
    const cases: [string, string, number, RegExp, string | null][] = [
      ['a 5xx', '1.0.1', 502, /HTTP 500/, 'h1.0.1'],
      ['a hang', '1.0.2', 504, /no data for 6 s/, 'h1.0.2'],
      ['an oversize package (no Content-Length)', '1.0.3', 502, /over the module proxy's 1048576-byte limit/, 'h1.0.3'],
      ['a package that is not an archive', '1.0.4', 502, /package check failed: .*not a valid tar\.gz archive/, 'h1.0.4'],
      ['a package with no .tf at its root', '1.0.7', 502, /package check failed: .*has no \.tf or \.tofu file at its root/, 'h1.0.7'],
      ['an s3:: source', '1.0.5', 422, /"s3::https:\/\/s3-eu-west-1\.amazonaws\.com\/acme-modules\/hostile\.zip" cannot be proxied: s3:: sources need/, null],
      ['a git source on another host', '1.0.6', 422, /cannot be proxied: git repositories are fetched only from github\.com .*not from gitlab\.com/, null],
    ];
    for (const [what, version, status, message, ref] of cases) {
      it(what, async () => {
        const path = `/v1/modules/${NS}/hostile/aws/${version}/download`;
        const asked = () => upstream.count(`/hostile/aws/${version}/download`) + (ref ? upstream.count(`tar.gz/${ref}`) : 0);
        const first = await at(path).catch((error: Error) => {
          throw new Error(`${error.message}\n${server.log().slice(-3000)}`);
        });
        expect(first.status, first.body.toString()).toBe(status);
        expect(errorOf(first)).toContain(`module ${HOST}/${NS}/hostile/aws ${version} could not be proxied from ${UPSTREAM}/${NS}/hostile/aws: `);
        expect(errorOf(first)).toMatch(message);
        const once = asked();
        expect(once).toBeGreaterThan(0);
        const again = await at(path);
        expect(again.status).toBe(status);
        expect(asked()).toBeGreaterThan(once); // retried, not a remembered failure
        expect((await at(`/v1/module-archives/${HOST}/${NS}/hostile/aws/${version}/hostile-aws-${version}.tar.gz`)).status).toBe(404);
      });
    }

    it('the refusals are audited, and once the upstream is repaired the next request stores the version', async () => {
      const refused = (await auditEntries()).filter((e) => e.action === 'module.proxy' && e.target === `${HOST}/${NS}/hostile/aws 1.0.1`);
      expect(refused.map((e) => e.outcome)).toEqual(['refused', 'refused']);
      upstream.repair('hostile', '1.0.1');
      const fixed = await at(`/v1/modules/${NS}/hostile/aws/1.0.1/download`);
      expect(fixed.status, fixed.body.toString()).toBe(204);
      expect((await at(String(fixed.headers['x-terraform-get']))).status).toBe(200);
    });
  });

  it('concurrent first downloads of one version: one upstream fetch, one stored package', async () => {
    const answers = await Promise.all(Array.from({ length: 5 }, () => at(`/v1/modules/${NS}/vpc/aws/1.0.0/download`)));
    expect(answers.map((a) => a.status)).toEqual(Array(5).fill(204));
    expect(upstream.count('tar.gz/v1.0.0')).toBe(1);
  });

  it('a proxied version the operator withdraws leaves the list, though the upstream still offers it; restored, it is back', async () => {
    const lifecycle = (...args: string[]) => runScript('lifecycle', [...args, '--hostname', HOST, '--persist-to', state, '--config', configPath]);
    const withdrawn = await lifecycle('withdraw', `${NS}/vpc/aws`, '--version', '1.0.0', '--message', 'use 1.1.0');
    expect(withdrawn.code, withdrawn.stderr).toBe(0);
    const listed = async (want: string[]) => {
      let versions: string[] = [];
      for (let waited = 0; waited < 15_000 && versions.join() !== want.join(); waited += 500) {
        if (waited) await new Promise((resolve) => setTimeout(resolve, 500));
        versions = versionsOf(await at(`/v1/modules/${NS}/vpc/aws/versions`));
      }
      return versions;
    };
    expect(await listed(['1.1.0'])).toEqual(['1.1.0']);
    expect((await lifecycle('restore', `${NS}/vpc/aws`, '--version', '1.0.0')).code).toBe(0);
    expect(await listed(['1.1.0', '1.0.0'])).toEqual(['1.1.0', '1.0.0']);
  });

  it('private mode: a request without a valid token or scope never reaches the upstream', async () => {
    const token = async (namespace: string) => {
      const created = await runScript('token', ['create', '--namespace', namespace, '--persist-to', state, '--config', configPath]);
      expect(created.code, created.stderr).toBe(0);
      return created.stdout.trim().split('\n').at(-1)!;
    };
    const [other, ours] = [await token('other'), await token(NS)];
    const locked = await startDevServer({
      stateDir: state,
      port: await freePort(),
      certificate,
      vars: { ACCESS: 'private', URL_SIGNING_SECRET: 'module-proxy-test-secret-0123456789', PULL_TIMEOUT_SECONDS: '6' },
    });
    try {
      const ask = (path: string, bearer?: string) =>
        get(`${locked.origin}${path}`, {
          ca: certificate.pem,
          headers: { 'accept-encoding': 'identity', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
        });
      const before = upstream.requests.length;
      const fresh = `/v1/modules/${NS}/hostile/aws`;
      expect((await ask(`${fresh}/versions`)).status).toBe(401);
      expect((await ask(`${fresh}/1.0.5/download`, 'not-a-token')).status).toBe(401);
      expect((await ask(`${fresh}/1.0.5/download`, other)).status).toBe(403);
      expect(upstream.requests.length).toBe(before);
      // With a token that covers the namespace the same request does reach the upstream (so the guard is what kept it away).
      const allowed = await ask(`${fresh}/1.0.5/download`, ours);
      expect(allowed.status).toBe(422);
      expect(upstream.requests.length).toBeGreaterThan(before);
    } finally {
      await locked.stop();
    }
  });

  it('with the upstream stopped, a second init in a fresh directory installs from what we hold; the list says the upstream is unreachable', async () => {
    await upstream.stop();
    await new Promise((resolve) => setTimeout(resolve, 2500)); // PULL_LIST_SECONDS: the remembered upstream list expires
    const listed = await at(`/v1/modules/${NS}/vpc/aws/versions`);
    expect(listed.status).toBe(200);
    expect(versionsOf(listed)).toEqual(['1.1.0', '1.0.0']);
    expect(String(listed.headers['x-mirror-upstream'])).toMatch(/^unreachable; listing only the versions this registry holds/);
    const warm = await initModules('warm', '~> 1.0');
    expect(warm.ok, `${warm.output}\n${server.log().slice(-3000)}`).toBe(true);
    expect(warm.modules.find((m) => m.Key === 'vpc')?.Version).toBe('1.1.0');
    // Nothing held and the upstream gone: a clear 502 naming the module, not a crash.
    const gone = await at(`/v1/modules/${NS}/never/aws/versions`);
    expect(gone.status).toBe(502);
    expect(errorOf(gone)).toMatch(new RegExp(`module ${HOST}/${NS}/never/aws is not held here and its upstream could not be listed`));
  });
});
