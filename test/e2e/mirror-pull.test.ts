import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectArchive } from '../../scripts/lib/provider/archive';
import { StaticUpstream, type ReleaseSpec, releaseUpstreamGpgKey } from '../scripts/mirror/upstream';
import { configPath, runScript } from '../scripts/helpers';
import { parseLockFile } from './installer';
import { get, type HttpResponse } from './http';
import { freePort, makeCertificate, startDevServer, type Certificate, type DevServer } from './server';
import { missing, terraform } from '../tools';

// The upstream's GnuPG home and agent go with this file.
afterAll(releaseUpstreamGpgKey);

/**
 * Pull-through, as a user meets it: a policy file and an EMPTY mirror
 * (`npm run mirror -- policy set`), `wrangler dev` over HTTPS, and real
 * `terraform init` through `network_mirror`. Independent upstreams (plain
 * HTTP on loopback, reached through the policy's `hosts`; SHA256SUMS signed
 * by a GnuPG-made key) stand in for registry.terraform.io: a good one and
 * a hostile one whose every version carries one defect.
 */
const run = promisify(execFile);
const goPlatform = `${process.platform}_${process.arch === 'x64' ? 'amd64' : process.arch}`;
const PLATFORMS = [...new Set([goPlatform, 'darwin_arm64'])];
const GOOD = 'upstream.test';
const HOSTILE = 'hostile.test';
const source = `${GOOD}/acme/thing`;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

if (!terraform) console.warn('e2e mirror-pull: skipping: no terraform binary in /usr/local/bin or /usr/bin');

const HOSTILE_RELEASES: ReleaseSpec[] = [
  { version: '1.0.1', platforms: ['linux_amd64'], defect: 'bad-signature' },
  { version: '1.0.2', platforms: ['linux_amd64'], defect: 'foreign-key' },
  { version: '1.0.3', platforms: ['linux_amd64'], defect: 'tampered-archive' },
  { version: '1.0.4', platforms: ['linux_amd64'], defect: 'hang' },
  { version: '1.0.5', platforms: ['linux_amd64'], defect: 'archive-500' },
  { version: '1.0.6', platforms: ['linux_amd64'], defect: 'redirect-loop' },
  { version: '1.0.7', platforms: ['linux_amd64'], defect: 'huge-json' },
  { version: '1.0.8', platforms: ['linux_amd64'], defect: 'hang-archive' },
  { version: '1.0.9', platforms: ['linux_amd64'], defect: 'wrong-shasum' },
  // Sent without Content-Length (chunked): streamed and checked all the same.
  { version: '1.0.10', platforms: ['linux_amd64'], defect: 'tampered-archive', chunked: true },
  { version: '1.0.11', platforms: ['linux_amd64'], chunked: true },
];

describe.skipIf(missing('terraform', terraform))('pull-through: terraform init through an empty mirror with a policy', () => {
  let root: string;
  let state: string;
  let good: StaticUpstream;
  let hostile: StaticUpstream;
  let certificate: Certificate;
  let server: DevServer;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'edge-registry-e2e-pull-'));
    state = join(root, 'state');
    good = await StaticUpstream.start({
      namespace: 'acme',
      type: 'thing',
      plainHttp: true,
      releases: ['1.0.0', '1.1.0', '2.0.0'].map((version) => ({ version, platforms: [...PLATFORMS, 'windows_amd64'] })),
    });
    hostile = await StaticUpstream.start({ namespace: 'acme', type: 'hostile', plainHttp: true, releases: HOSTILE_RELEASES });
    await writeFile(
      join(root, 'mirror.json'),
      JSON.stringify({
        platforms: PLATFORMS,
        providers: [
          { source: `${GOOD}/acme/*`, versions: '~> 1.0' },
          { source: `${HOSTILE}/acme/hostile`, versions: '>= 1.0.0', platforms: ['linux_amd64'] },
        ],
        hosts: {
          [GOOD]: { 'providers.v1': `${good.origin}/v1/providers/` },
          [HOSTILE]: { 'providers.v1': `${hostile.origin}/v1/providers/` },
        },
      }),
    );
    const set = await runScript('mirror', ['policy', 'set', join(root, 'mirror.json'), '--persist-to', state, '--wrangler-config', configPath]);
    expect(set.code, set.stderr).toBe(0);
    certificate = makeCertificate(root);
    server = await startDevServer({
      stateDir: state,
      port: await freePort(),
      certificate,
      vars: { PULL_TIMEOUT_SECONDS: '6', PULL_REFRESH_SECONDS: '2', PULL_LIST_SECONDS: '2' },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await good?.stop();
    await hostile?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const at = (path: string, headers: Record<string, string> = {}) =>
    get(`${server.origin}${path}`, { ca: certificate.pem, headers: { 'accept-encoding': 'identity', ...headers } });
  /** A GET whose body may be cut off: the response, or the error that ended it. */
  const attempt = (path: string): Promise<HttpResponse | Error> => at(path).catch((error: Error) => error);
  const auditEntries = async () => {
    const listed = await runScript('audit', ['--json', '--persist-to', state, '--config', configPath]);
    expect(listed.code, listed.stderr).toBe(0);
    return (JSON.parse(listed.stdout) as { entries: { action: string; target: string; outcome: string; reason?: string; digests?: Record<string, string> }[] })
      .entries;
  };
  const errorOf = (response: HttpResponse) => (JSON.parse(response.body.toString('utf8')) as { errors: string[] }).errors[0]!;

  async function terraformInit(name: string, version: string): Promise<{ dir: string; output: string; ok: boolean }> {
    const dir = join(root, name);
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'main.tf'),
      `terraform {\n  required_providers {\n    thing = {\n      source  = "${source}"\n      version = "${version}"\n    }\n  }\n}\n`,
    );
    await writeFile(join(dir, 'cli.tfrc'), `provider_installation {\n  network_mirror {\n    url = "${server.origin}/v1/mirror/"\n  }\n}\n`);
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      TF_CLI_CONFIG_FILE: join(dir, 'cli.tfrc'),
      SSL_CERT_FILE: certificate.certPath,
      CHECKPOINT_DISABLE: '1',
      TF_IN_AUTOMATION: '1',
    };
    try {
      const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color'], { cwd: dir, env, timeout: 120_000 });
      return { dir, output: stdout + stderr, ok: true };
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      return { dir, output: `${stdout}${stderr}`, ok: false };
    }
  }

  it("installs an allowed provider on the first init, with the hashes of the upstream's signed SHA256SUMS", async () => {
    const first = await terraformInit('cold', '~> 1.0');
    expect(first.ok, `${first.output}\n${server.log().slice(-3000)}`).toBe(true);
    expect(first.output).toContain(`Installed ${source} v1.1.0 (verified checksum)`);
    const file = `terraform-provider-thing_1.1.0_${goPlatform}.zip`;
    expect(good.archiveRequestsFor(file)).toBe(1);

    // The served zh: of every allowed platform are the upstream's signed SHA256SUMS lines.
    const sums = (await (await fetch(`${good.origin}/files/terraform-provider-thing_1.1.0_SHA256SUMS`)).text())
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/))
      .filter(([, name]) => PLATFORMS.some((p) => name!.endsWith(`_${p}.zip`)));
    // The commit follows the download; a new version's document is fresh within INDEX_CACHE_SECONDS (5 s here).
    let served: { archives: Record<string, { hashes: string[] }> } = { archives: {} };
    for (let waited = 0; waited < 15_000 && !served.archives[goPlatform]?.hashes.some((h) => h.startsWith('h1:')); waited += 500) {
      if (waited) await new Promise((resolve) => setTimeout(resolve, 500));
      served = JSON.parse((await at(`/v1/mirror/${source}/1.1.0.json`)).body.toString('utf8')) as typeof served;
    }
    expect(Object.keys(served.archives).sort()).toEqual([...PLATFORMS].sort()); // windows_amd64 is outside the policy
    expect(
      Object.values(served.archives)
        .flatMap((a) => a.hashes.filter((h) => h.startsWith('zh:')))
        .sort(),
    ).toEqual(sums.map(([hash]) => `zh:${hash}`).sort());
    // The h1 the Worker computed for the pulled archive is the one Terraform computed (lock file, the independent check)
    // and the CLI's inspectArchive (the same reader over a file, so a mismatch would be its ZipSource's).
    const lock = parseLockFile(await readFile(join(first.dir, '.terraform.lock.hcl'), 'utf8')).get(source)!;
    expect(lock.version).toBe('1.1.0');
    const h1 = served.archives[goPlatform]!.hashes.find((h) => h.startsWith('h1:'));
    expect(lock.hashes).toContain(h1);
    const zipPath = join(root, file);
    await writeFile(zipPath, Buffer.from(await (await fetch(`${good.origin}/files/${file}`)).arrayBuffer()));
    expect((await inspectArchive(zipPath)).h1).toBe(h1);
    // Stored whole: the CLI lists it as a mirrored version.
    const list = await runScript('mirror', ['list', '--json', '--persist-to', state, '--wrangler-config', configPath]);
    const held = (JSON.parse(list.stdout) as { providers: { address: string; versions: { version: string; platforms: string[] }[] }[] }).providers;
    expect(held.find((p) => p.address === source)?.versions).toEqual([
      { version: '1.1.0', platforms: [goPlatform], signedBy: expect.any(String), mirroredAt: expect.any(String) },
    ]);
    // …and the audit log says what was stored, with the archive's digest.
    expect((await auditEntries()).filter((e) => e.action === 'mirror.pull' && e.target === `${source} 1.1.0`)).toEqual([
      expect.objectContaining({ outcome: 'ok', digests: { [file]: sums.find(([, name]) => name === file)![0] } }),
    ]);
  });

  it('refuses a version outside the policy, with a message', async () => {
    const outside = await terraformInit('outside', '2.0.0');
    expect(outside.ok).toBe(false);
    expect(outside.output).toMatch(/no available releases match the given constraints\s+2\.0\.0/);
    const direct = await at(`/v1/mirror/${source}/2.0.0.json`);
    expect(direct.status).toBe(404);
    expect(errorOf(direct)).toBe(`provider ${source} 2.0.0 is not in this mirror, and the pull-through policy does not allow this version`);
    const elsewhere = await at(`/v1/mirror/${GOOD}/other-ns/thing/index.json`);
    expect(elsewhere.status).toBe(404);
    expect(errorOf(elsewhere)).toMatch(/upstream\.test\/other-ns\/thing is not in this mirror/);
    expect(good.requests.some((p) => p.includes('other-ns'))).toBe(false);
  });

  it('10 simultaneous first requests for one archive: one upstream download, identical verified bytes', async () => {
    const file = `terraform-provider-thing_1.0.0_${goPlatform}.zip`;
    await at(`/v1/mirror/${source}/1.0.0.json`);
    const responses = await Promise.all(Array.from({ length: 10 }, () => at(`/v1/archives/${source}/1.0.0/${file}`)));
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    const upstreamBytes = Buffer.from(await (await fetch(`${good.origin}/files/${file}`)).arrayBuffer());
    for (const response of responses) expect(sha256(response.body)).toBe(sha256(upstreamBytes));
    expect(good.archiveRequestsFor(file)).toBe(2); // 1 by the Worker, 1 by this test just now
  });

  describe('hostile upstream: nothing stored, an error naming the provider, a later request retries', () => {
    const hostileSource = `${HOSTILE}/acme/hostile`;
    const zip = (version: string) => `terraform-provider-hostile_${version}_linux_amd64.zip`;
    const cases: [string, string, 'document' | 'archive', RegExp][] = [
      ['a bad signature', '1.0.1', 'document', /signature check failed: .*SHA256SUMS\.sig .*does not verify SHA256SUMS with any key in signing_keys/],
      ['a key not in signing_keys', '1.0.2', 'document', /signature check failed: .*made by key [0-9A-F]+\) does not verify/],
      ['a hang', '1.0.4', 'document', /timed out after 6 s/],
      ['oversize JSON', '1.0.7', 'document', /over the 8388608-byte limit/],
      [
        'a document whose shasum is not its signed SHA256SUMS line',
        '1.0.9',
        'document',
        /checksum check failed: .* says shasum [0-9a-f]{64} for linux_amd64, the signed SHA256SUMS says/,
      ],
      ['a 5xx', '1.0.5', 'archive', /HTTP 500/],
      ['a redirect loop', '1.0.6', 'archive', /redirect loop/],
    ];
    for (const [what, version, where, message] of cases) {
      it(what, async () => {
        const path = where === 'document' ? `/v1/mirror/${hostileSource}/${version}.json` : `/v1/archives/${hostileSource}/${version}/${zip(version)}`;
        const before = hostile.requests.length;
        const response = await at(path);
        expect(response.status, response.body.toString()).toBeGreaterThanOrEqual(500);
        expect(errorOf(response)).toContain(`provider ${hostileSource} ${version}`);
        expect(errorOf(response)).toMatch(message);
        const asked = hostile.requests.length - before;
        expect(asked).toBeGreaterThan(0);
        const again = await at(path);
        expect(again.status).toBe(response.status);
        expect(hostile.requests.length - before).toBeGreaterThan(asked); // retried, not a remembered failure
        expect((await at(`/v1/archives/${hostileSource}/${version}/${zip(version)}`)).status).toBeGreaterThanOrEqual(400);
      });
    }

    for (const [what, version] of [
      ['archive bytes that do not match SHA256SUMS', '1.0.3'],
      ['an archive that stalls half-way', '1.0.8'],
      ['archive bytes that do not match SHA256SUMS, sent without Content-Length', '1.0.10'],
    ] as const) {
      it(`${what}: the client's download is aborted, not completed`, async () => {
        const document = await at(`/v1/mirror/${hostileSource}/${version}.json`);
        expect(document.status).toBe(200); // the signed SUMS verified: only the bytes are wrong
        for (let round = 1; round <= 2; round++) {
          const result = await attempt(`/v1/archives/${hostileSource}/${version}/${zip(version)}`);
          expect(result instanceof Error || result.status !== 200, 'a complete 200 of wrong bytes').toBe(true);
          expect(hostile.archiveRequestsFor(zip(version))).toBe(round);
        }
        const list = await runScript('mirror', ['list', '--json', '--persist-to', state, '--wrangler-config', configPath]);
        expect(list.stdout).not.toContain(hostileSource);
        // The refusal is recorded after the client's download was cut short: wait for the second one.
        let refused: { outcome: string; reason?: string }[] = [];
        for (let waited = 0; waited < 20_000 && refused.length < 2; waited += 1000) {
          if (waited) await new Promise((resolve) => setTimeout(resolve, 1000));
          refused = (await auditEntries()).filter((e) => e.action === 'mirror.pull' && e.target === `${hostileSource} ${version}`);
        }
        expect(refused.map((e) => e.outcome)).toEqual(['refused', 'refused']);
        expect(refused[0]!.reason).toMatch(
          version !== '1.0.8' ? /checksum check failed: .* has SHA-256 [0-9a-f]{64}, the signed SHA256SUMS says/ : /no data for 6 s/,
        );
      });
    }
  });

  it('an OCI request pulls through as a /v1/ one does: tags from the policy, and an index only once every allowed platform is held', async () => {
    const repo = `/v2/providers/${source}`;
    const tags = JSON.parse((await at(`${repo}/tags/list`)).body.toString('utf8')) as { tags: string[] };
    expect(tags.tags).toEqual(['1.0.0', '1.1.0']); // 2.0.0 is outside ~> 1.0
    const sumsOf = async (version: string) =>
      new Map(
        (await (await fetch(`${good.origin}/files/terraform-provider-thing_${version}_SHA256SUMS`)).text())
          .trim()
          .split('\n')
          .map((line) => line.split(/\s+/).reverse() as [string, string]),
      );
    // 1.0.0 is held for this platform only (the test above): the OCI request pulls the missing platforms first.
    for (const version of ['1.0.0']) {
      const before = good.archiveRequests();
      const response = await at(`${repo}/manifests/${version}`);
      expect(response.status, `${version}: ${response.body.toString('utf8')}\n${server.log().slice(-2000)}`).toBe(200);
      expect(response.headers['content-type']).toBe('application/vnd.oci.image.index.v1+json');
      const index = JSON.parse(response.body.toString('utf8')) as { manifests: { digest: string; platform: { os: string; architecture: string } }[] };
      expect(index.manifests.map((m) => `${m.platform.os}_${m.platform.architecture}`).sort()).toEqual([...PLATFORMS].sort());
      expect(good.archiveRequests() - before).toBe(PLATFORMS.length - 1);
      const sums = await sumsOf(version);
      for (const entry of index.manifests) {
        const manifest = JSON.parse((await at(`${repo}/manifests/${entry.digest}`)).body.toString('utf8')) as {
          layers: { digest: string; annotations: Record<string, string> }[];
        };
        const [layer] = manifest.layers;
        const blob = await at(`${repo}/blobs/${layer!.digest}`);
        expect(blob.status).toBe(200);
        // The layer is the upstream's signed SHA256SUMS line of that file.
        expect(sums.get(layer!.annotations['org.opencontainers.image.title']!)).toBe(sha256(blob.body));
        expect(layer!.digest).toBe(`sha256:${sha256(blob.body)}`);
      }
    }
  });

  it('an archive sent without Content-Length is checked while stored (multipart), then served from R2 with its length', async () => {
    const file = 'terraform-provider-hostile_1.0.11_linux_amd64.zip';
    expect((await at(`/v1/mirror/${HOSTILE}/acme/hostile/1.0.11.json`)).status).toBe(200);
    const response = await at(`/v1/archives/${HOSTILE}/acme/hostile/1.0.11/${file}`);
    expect(response.status, response.body.toString()).toBe(200);
    const upstreamBytes = Buffer.from(await (await fetch(`${hostile.origin}/files/${file}`)).arrayBuffer());
    expect(response.headers['content-length']).toBe(String(upstreamBytes.length));
    expect(sha256(response.body)).toBe(sha256(upstreamBytes));
    let held: { address: string; versions: { version: string }[] }[] = [];
    for (let waited = 0; waited < 15_000 && !held.some((p) => p.address === `${HOSTILE}/acme/hostile`); waited += 1000) {
      if (waited) await new Promise((resolve) => setTimeout(resolve, 1000));
      const list = await runScript('mirror', ['list', '--json', '--persist-to', state, '--wrangler-config', configPath]);
      held = (JSON.parse(list.stdout) as { providers: typeof held }).providers;
    }
    expect(held.find((p) => p.address === `${HOSTILE}/acme/hostile`)?.versions.map((v) => v.version)).toEqual(['1.0.11']);
    expect(sha256((await at(`/v1/archives/${HOSTILE}/acme/hostile/1.0.11/${file}`)).body)).toBe(sha256(upstreamBytes));
    expect(hostile.archiveRequestsFor(file)).toBe(2); // 1 by the Worker, 1 by this test
  });

  it('private mode: a request without a valid token, scope or signature never reaches the upstream', async () => {
    const token = async (namespace: string) => {
      const created = await runScript('token', ['create', '--namespace', namespace, '--persist-to', state, '--config', configPath]);
      expect(created.code, created.stderr).toBe(0);
      return created.stdout.trim().split('\n').at(-1)!;
    };
    const [other, every] = [await token('other'), await token('*')];
    const locked = await startDevServer({
      stateDir: state,
      port: await freePort(),
      certificate,
      vars: { ACCESS: 'private', URL_SIGNING_SECRET: 'pull-through-test-secret-0123456789' },
    });
    try {
      const ask = (path: string, bearer?: string) =>
        get(`${locked.origin}${path}`, { ca: certificate.pem, headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
      const before = good.requests.length;
      const fresh = `/v1/mirror/${source}`;
      expect((await ask(`${fresh}/index.json`)).status).toBe(401);
      expect((await ask(`${fresh}/1.0.0.json`, 'not-a-token')).status).toBe(401);
      expect((await ask(`${fresh}/1.0.0.json`, other)).status).toBe(403);
      expect((await ask(`/v1/archives/${source}/1.0.0/terraform-provider-thing_1.0.0_darwin_arm64.zip`)).status).toBe(403);
      expect(good.requests.length).toBe(before);
      // The same request with a token that covers it does reach the upstream (so the guard is what kept it away).
      const allowed = await ask(`${fresh}/index.json`, every);
      expect(allowed.status, allowed.body.toString()).toBe(200);
      expect(good.requests.length).toBeGreaterThan(before);
    } finally {
      await locked.stop();
    }
  });

  it('an upstream that later announces other bytes for a held package: ours stays, the change is logged and audited', async () => {
    const file = `terraform-provider-thing_1.1.0_${goPlatform}.zip`;
    const before = JSON.parse((await at(`/v1/mirror/${source}/1.1.0.json`)).body.toString('utf8')) as { archives: Record<string, { hashes: string[] }> };
    await good.setReleases(['1.0.0', '1.1.0', '2.0.0'].map((version) => ({ version, platforms: [...PLATFORMS, 'windows_amd64'], salt: 'rebuilt' })));
    await new Promise((resolve) => setTimeout(resolve, 2500)); // PULL_REFRESH_SECONDS
    const after = JSON.parse((await at(`/v1/mirror/${source}/1.1.0.json`)).body.toString('utf8')) as typeof before;
    expect(after.archives[goPlatform]).toEqual(before.archives[goPlatform]);
    const ours = (await at(`/v1/archives/${source}/1.1.0/${file}`)).body;
    expect(`zh:${sha256(ours)}`).toBe(before.archives[goPlatform]!.hashes.find((h) => h.startsWith('zh:')));
    let changed: { reason?: string }[] = [];
    for (let waited = 0; waited < 10_000 && changed.length === 0; waited += 1000) {
      if (waited) await new Promise((resolve) => setTimeout(resolve, 1000));
      changed = (await auditEntries()).filter((e) => e.action === 'mirror.upstream-changed' && e.target === `${source} 1.1.0`);
    }
    expect(changed).toHaveLength(1);
    expect(changed[0]!.reason).toMatch(new RegExp(`UPSTREAM CHANGED: .* now gives shasum [0-9a-f]{64} for ${goPlatform}; the mirror holds .* and keeps it`));
    expect(server.log()).toMatch(/UPSTREAM CHANGED/);
  });

  it('a second init in a fresh directory works with the upstream gone, from what the mirror holds', async () => {
    await good.stop();
    await new Promise((resolve) => setTimeout(resolve, 2500)); // PULL_LIST_SECONDS and PULL_REFRESH_SECONDS: nothing remembered from the upstream
    const index = await at(`/v1/mirror/${source}/index.json`);
    expect(index.status).toBe(200);
    expect(Object.keys((JSON.parse(index.body.toString('utf8')) as { versions: Record<string, unknown> }).versions).sort()).toEqual(['1.0.0', '1.1.0']);
    expect(String(index.headers['x-mirror-upstream'])).toMatch(
      /^unreachable; listing only the versions this mirror holds \(list versions http:\/\/127\.0\.0\.1:\d+\//,
    );
    const document = await at(`/v1/mirror/${source}/1.1.0.json`);
    expect(document.status).toBe(200);
    expect(String(document.headers['x-mirror-upstream'])).toMatch(/^unreachable; listing only the platforms this mirror holds/);
    const warm = await terraformInit('warm', '~> 1.0');
    expect(warm.ok, `${warm.output}\n${server.log().slice(-3000)}`).toBe(true);
    expect(warm.output).toContain(`Installed ${source} v1.1.0 (verified checksum)`);
  });
});
