import { request } from 'node:https';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScript, writeDist, writeKeyFile } from '../scripts/helpers';
import { get } from './http';
import { startHarnessServer, type HarnessServer } from './production-dev';
import { makeCertificate, type Certificate } from './server';
import { terraformInit, type InitResult } from './terraform-init';
import { missing, terraform } from '../tools';

/**
 * Issue 34's publish-while-polling, lifecycle and revocation scenarios with real `terraform` 1.11, through
 * `wrangler dev` with the production harness (test/fixtures/production/dev-entry.ts: each location its own KV
 * read cache, one write a second per KV key, the Free plan's per-invocation limits), locations A and B on two
 * HTTPS ports (docs/production-rules.md).
 *
 * 1. Versions of a provider and a module published at A through the publish API (`publish-provider` and
 *    `publish-module --registry A` with a publish token) while terraform at B inits in a loop (no lock file,
 *    no cache, `>= 1.0.0`: each init picks the newest version B lists): the provider through providers.v1 (a
 *    `host` block) and through the network mirror, the module through modules.v1, with B also polling for each version's documents before it exists (a
 *    release pipeline waiting for it: B caches those misses) and the harness clock moved between rounds so
 *    B's copies expire at different moments. 0 failed inits; each installed version is one B listed then.
 *    (Without readDocument's `fromRecord`, src/store/read-document.ts, the round where B's lists show 1.2.0
 *    while B still holds its documents' misses fails all three inits.)
 * 2. Deprecate, then withdraw, the newest version at A (the publish API's lifecycle route) while B inits: no
 *    init fails; once B's copies have expired, a constraint pinned to the withdrawn version finds no release,
 *    unpinned inits install the version before it.
 * 3. Private mode: a read token in use by terraform at B, revoked (`npm run token -- revoke` on the state):
 *    refused at A (where it was never read) at once; accepted at B from B's copy right after, refused there
 *    within the 60 s the docs state (docs/private.md).
 */
const goPlatform = `${process.platform}_${process.arch === 'x64' ? 'amd64' : process.arch}`;
const HOST = 'registry.example.com';
const LOCATIONS = ['A', 'B'];
const PROVIDER = `${HOST}/acme/thing`;
const MODULE = `${HOST}/acme/vpc/aws`;
const PROVIDER_LIST = '/v1/providers/acme/thing/versions';
const MIRROR_BASE = `/v1/mirror/${HOST}/acme/thing`;
const MODULE_LIST = '/v1/modules/acme/vpc/aws/versions';
/** What terraform 1.11 prints when the module registry answers 401 to a token it sends. */
const REFUSED = `from ${HOST}: error looking up module versions: 401 Unauthorized`;
const SECRET = 'production-publish-while-polling-url-signing-0123456789';

if (!terraform) console.warn('e2e production-publish-while-polling: skipping: no terraform binary in /usr/local/bin or /usr/bin');

/** Strict x.y.z comparison (the scenario publishes no pre-releases). */
const compare = (a: string, b: string) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i++) if (x![i] !== y![i]) return x![i]! - y![i]!;
  return 0;
};
const newest = (versions: string[]) => [...versions].sort(compare).at(-1);
const flat = (text: string) => text.replace(/\s+/g, ' ');

interface Listed {
  provider: string[];
  mirror: string[];
  module: string[];
}

/** The shared setup of both describes: a state, a certificate, a publish token, a harnessed dev server on A and B. */
class Scenario {
  root = '';
  state = '';
  certificate!: Certificate;
  harness!: HarnessServer;
  publishToken = '';
  private rounds = 0;

  async start(name: string, vars: Record<string, string> = {}, before?: () => Promise<void>): Promise<void> {
    this.root = await mkdtemp(join(tmpdir(), `edge-registry-e2e-${name}-`));
    this.state = join(this.root, 'state');
    this.certificate = makeCertificate(this.root);
    this.publishToken = await this.token('create', '--publish', 'acme', '--namespace-wide', '--name', 'release');
    await before?.();
    this.harness = await startHarnessServer({ stateDir: this.state, dir: this.root, certificate: this.certificate, locations: LOCATIONS, vars });
  }

  async stop(): Promise<void> {
    await this.harness?.stop();
    if (this.root) await rm(this.root, { recursive: true, force: true });
  }

  /** `npm run token -- ARGS` on this state; the last line of its output (a created token). */
  async token(...args: string[]): Promise<string> {
    const result = await runScript('token', [...args, '--persist-to', this.state]);
    expect(result.code, result.stderr).toBe(0);
    return result.stdout.trimEnd().split('\n').at(-1)!;
  }

  /** The CLI publishing through A's publish API: only the publish token and the CA in its environment. */
  async publishAtA(script: 'publish-provider' | 'publish-module', args: string[]): Promise<void> {
    const result = await runScript(script, [...args, '--registry', this.harness.origins.A!, '--json'], {
      EDGE_REGISTRY_TOKEN: this.publishToken,
      NODE_EXTRA_CA_CERTS: this.certificate.certPath,
      CLOUDFLARE_API_TOKEN: '',
      R2_ACCESS_KEY_ID: '',
      R2_SECRET_ACCESS_KEY: '',
      EDGE_REGISTRY_SIGNING_KEY: '',
    });
    expect(result.code, `${script} ${args.join(' ')}: ${result.stderr}`).toBe(0);
    expect(JSON.parse(result.stdout).status).toBe('published');
  }

  /** A module version's directory. */
  async moduleDir(version: string): Promise<string> {
    const dir = join(this.root, `vpc-${version}`);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'main.tf'), `variable "name" {\n  type = string\n}\n\noutput "release" {\n  value = "${version}"\n}\n`);
    return dir;
  }

  /** GET `path` at `location` (a client that sends what terraform sends). */
  at(location: string, path: string, token?: string) {
    return get(new URL(path, `${this.harness.origins[location]}/`).href, {
      ca: this.certificate.pem,
      headers: { 'accept-encoding': 'identity', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  }

  /** What `location` lists now: providers.v1, the network mirror's index.json, modules.v1 ([] for a 404). */
  async listed(location: string): Promise<Listed> {
    const read = async (path: string, pick: (body: never) => string[]) => {
      const response = await this.at(location, path);
      if (response.status === 404) return [];
      expect(response.status, `${location} ${path}`).toBe(200);
      return pick(JSON.parse(response.body.toString('utf8')) as never).sort(compare);
    };
    const [provider, mirror, module] = await Promise.all([
      read(PROVIDER_LIST, (b: { versions: { version: string }[] }) => b.versions.map((v) => v.version)),
      read(`${MIRROR_BASE}/index.json`, (b: { versions: Record<string, unknown> }) => Object.keys(b.versions)),
      read(MODULE_LIST, (b: { modules: { versions: { version: string }[] }[] }) => b.modules[0]!.versions.map((v) => v.version)),
    ]);
    return { provider, mirror, module };
  }

  /**
   * A fresh working directory at `location` (no lock file, no .terraform, no plugin cache) and its init:
   * `provider` installs the provider through providers.v1 and `module` the module through modules.v1 (a host
   * block pointing at the location's origin); `mirror` installs the provider through the location's network
   * mirror. `token`: a credentials block for the registry's host.
   */
  async init(
    location: string,
    how: 'provider' | 'mirror' | 'module',
    constraint = '>= 1.0.0',
    token?: string,
  ): Promise<InitResult & { provider?: string; module?: string }> {
    const origin = this.harness.origins[location]!;
    const work = join(this.root, `init-${++this.rounds}-${location}-${how}`);
    await mkdir(work, { recursive: true });
    const provider = `terraform {\n  required_providers {\n    thing = {\n      source  = "${PROVIDER}"\n      version = "${constraint}"\n    }\n  }\n}\n`;
    const module = `module "vpc" {\n  source  = "${MODULE}"\n  version = "${constraint}"\n  name    = "main"\n}\n`;
    await writeFile(join(work, 'main.tf'), how === 'module' ? module : provider);
    const services =
      how === 'mirror'
        ? `provider_installation {\n  network_mirror {\n    url = "${origin}/v1/mirror/"\n  }\n}\n`
        : `host "${HOST}" {\n  services = {\n    "providers.v1" = "${origin}/v1/providers/"\n    "modules.v1"   = "${origin}/v1/modules/"\n  }\n}\n`;
    // TF_CLI_CONFIG_FILE points at this file for the child only (terraformInit), credentials included.
    const credentials = token ? `credentials "${HOST}" {\n  token = "${token}"\n}\n` : '';
    await writeFile(join(work, 'cli.tfrc'), services + credentials);
    const result = await terraformInit(work, this.certificate.certPath, 90_000);
    const installed = new RegExp(`Installed ${PROVIDER.replaceAll('.', '\\.')} v(\\S+)`).exec(result.output)?.[1];
    return { ...result, provider: installed, module: result.modules.find((m) => m.Key === 'vpc')?.Version };
  }

  /** The harness found nothing wrong: no invocation answered 5xx or passed a Free plan limit. */
  async expectNoFailures(): Promise<void> {
    const { invocations } = await this.harness.state();
    expect(invocations.filter((i) => i.status >= 500 || i.exceeded !== null)).toEqual([]);
  }
}

describe.skipIf(missing('terraform', terraform))('publish, deprecate and withdraw at A while terraform inits at B (production harness)', () => {
  const s = new Scenario();
  let keyPath = '';
  const log: string[] = [];
  let started = 0;

  beforeAll(async () => {
    started = performance.now();
    await s.start('production-polling', {}, async () => {
      const key = await writeKeyFile(s.root, 'signer.asc');
      keyPath = key.path;
      const imported = await runScript('keys', ['import', '--namespace', 'acme', '--key-file', key.path, '--persist-to', s.state]);
      expect(imported.code, imported.stderr).toBe(0);
    });
  }, 120_000);
  afterAll(async () => {
    await s.stop();
    console.log(`production-publish-while-polling (public): ${((performance.now() - started) / 1000).toFixed(1)} s with setup\n${log.join('\n')}`);
  });

  /** Provider VERSION (one platform, signed with the namespace's key) and module VERSION, published at A through the API. */
  const publish = async (version: string) => {
    const dist = await writeDist(join(s.root, `dist-${version}`), 'thing', version, { platforms: [goPlatform] });
    await Promise.all([
      s.publishAtA('publish-provider', [dist, '--namespace', 'acme', '--key-file', keyPath]),
      s.publishAtA('publish-module', [await s.moduleDir(version), '--namespace', 'acme', '--name', 'vpc', '--system', 'aws', '--version', version]),
    ]);
  };

  /** Every failed init at B, by round (the scenarios' figure: 0 over the run). */
  const failedInits: string[] = [];

  /**
   * One round at B: the lists before, three inits (the provider through providers.v1, the provider through the
   * network mirror, the module through modules.v1) while `meanwhile` runs at A, the lists after. A failed init
   * is recorded in failedInits (the round goes on); a successful one installed a version B listed during it
   * (lists read just before and just after the init bracket what terraform read). Returns what was installed
   * (undefined where an init failed).
   */
  const round = async (label: string, meanwhile: Promise<unknown>) => {
    const before = await s.listed('B');
    const [provider, mirror, module] = await Promise.all([s.init('B', 'provider'), s.init('B', 'mirror'), s.init('B', 'module'), meanwhile]);
    const after = await s.listed('B');
    for (const [how, init] of [
      ['providers.v1', provider],
      ['network mirror', mirror],
      ['modules.v1', module],
    ] as const) {
      if (!init.ok) failedInits.push(`${label}, ${how}: ${flat(init.output).replace(/^.*?Error: /, 'Error: ')}`);
    }
    const seen = (kind: keyof Listed) => [...new Set([...before[kind], ...after[kind]])];
    if (provider.ok) expect(seen('provider')).toContain(provider.provider);
    if (mirror.ok) expect(seen('mirror')).toContain(mirror.provider);
    if (module.ok) expect(seen('module')).toContain(module.module);
    const direct = { provider: provider.provider, module: module.module };
    log.push(
      `  ${label}: B listed provider ${before.provider.join(',')} → ${after.provider.join(',')}, mirror ${before.mirror.join(',')} → ${after.mirror.join(',')}, module ${before.module.join(',')} → ${after.module.join(',')}; installed provider ${direct.provider ?? 'FAILED'}, mirror ${mirror.provider ?? 'FAILED'}, module ${direct.module ?? 'FAILED'}`,
    );
    return { before, after, direct, mirror };
  };

  const NEXT = ['1.1.0', '1.2.0', '1.3.0'];
  /** Harness clock moves between rounds: B's copies, read at different rounds, expire at different moments. */
  const ADVANCE = [25_000, 40_000, 20_000, 30_000];

  it('a provider and a module published at A while B inits in a loop: 0 failed inits, each installs a version B listed then', async () => {
    await publish('1.0.0');
    for (let r = 0; r <= NEXT.length; r++) {
      const next = NEXT[r];
      if (next) {
        // A release pipeline at B polling for the version before it exists: B keeps these misses for a minute.
        for (const path of [
          `/v1/providers/acme/thing/${next}/download/${goPlatform.replace('_', '/')}`,
          `${MIRROR_BASE}/${next}.json`,
          `/v1/modules/acme/vpc/aws/${next}/download`,
        ]) {
          expect((await s.at('B', path)).status, path).toBe(404);
        }
      }
      const { before, after, direct, mirror } = await round(`round ${r}${next ? ` (publishing ${next} at A)` : ''}`, next ? publish(next) : Promise.resolve());
      // Each init picked the newest version its list showed: never older than what B listed before it started,
      // never newer than what B lists after it.
      for (const [kind, installed] of [
        ['provider', direct.provider],
        ['module', direct.module],
        ['mirror', mirror.provider],
      ] as const) {
        if (installed === undefined) continue; // a failed init, in failedInits
        expect(compare(installed!, newest(before[kind])!), `${kind} ${installed}`).toBeGreaterThanOrEqual(0);
        expect(compare(installed!, newest(after[kind])!), `${kind} ${installed}`).toBeLessThanOrEqual(0);
      }
      await s.harness.advanceClock(ADVANCE[r]!);
    }
    // Once every copy at B has expired, B lists every version and installs the newest.
    await s.harness.advanceClock(61_000);
    const all = ['1.0.0', ...NEXT];
    expect(await s.listed('B')).toEqual({ provider: all, mirror: all, module: all });
    const { direct, mirror } = await round('after a minute', Promise.resolve());
    expect(failedInits).toEqual([]);
    expect([direct.provider, direct.module, mirror.provider]).toEqual(['1.3.0', '1.3.0', '1.3.0']);
    await s.expectNoFailures();
  }, 120_000);

  /** The publish API's lifecycle route at A (what `npm run lifecycle` does, with the publish token). */
  const lifecycle = async (kind: 'providers/acme/thing' | 'modules/acme/vpc/aws', body: object) => {
    const url = `${s.harness.origins.A}/v1/publish/lifecycle/${kind}`;
    const text = JSON.stringify(body);
    const { status, payload } = await new Promise<{ status: number; payload: string }>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          ca: s.certificate.pem,
          family: 4,
          headers: { authorization: `Bearer ${s.publishToken}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
        },
        (response) => {
          let payload = '';
          response.on('data', (chunk: Buffer) => (payload += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, payload }));
        },
      );
      req.on('error', reject);
      req.end(text);
    });
    expect(status, payload).toBe(200);
    expect(JSON.parse(payload).status).toBe('changed');
  };
  const both = (body: object) => Promise.all([lifecycle('providers/acme/thing', body), lifecycle('modules/acme/vpc/aws', body)]);

  it('deprecate, then withdraw 1.3.0 at A while B inits: no init fails; once B sees it, a pin to 1.3.0 finds no release, unpinned installs 1.2.0', async () => {
    await round('deprecating 1.3.0 at A', both({ action: 'deprecate', version: '1.3.0', message: 'use 1.2.0: 1.3.0 breaks tags' }));
    await s.harness.advanceClock(20_000);
    const withdrawing = await round('withdrawing 1.3.0 at A', both({ action: 'withdraw', version: '1.3.0', message: 'broken: use 1.2.0' }));
    // A saw its own write at once; B may still list 1.3.0 from its copy (and installs it: its files stay reachable).
    expect((await s.listed('A')).provider).not.toContain('1.3.0');
    await s.harness.advanceClock(20_000);
    await round('20 s later', Promise.resolve());

    // Past the minute of KV caching since the withdrawal: B no longer lists it, anywhere.
    await s.harness.advanceClock(61_000);
    const visible = await s.listed('B');
    expect(visible).toEqual({ provider: ['1.0.0', '1.1.0', '1.2.0'], mirror: ['1.0.0', '1.1.0', '1.2.0'], module: ['1.0.0', '1.1.0', '1.2.0'] });
    const [pinned, pinnedMirror, pinnedModule, unpinned] = await Promise.all([
      s.init('B', 'provider', '1.3.0'),
      s.init('B', 'mirror', '1.3.0'),
      s.init('B', 'module', '1.3.0'),
      round('after the withdrawal is visible at B', Promise.resolve()),
    ]);
    for (const failed of [pinned, pinnedMirror]) {
      expect(failed.ok, failed.output).toBe(false);
      expect(flat(failed.output)).toMatch(/no available releases match the given constraints 1\.3\.0/);
    }
    expect(pinnedModule.ok, pinnedModule.output).toBe(false);
    expect(flat(pinnedModule.output)).toMatch(
      /no available version of module "registry\.example\.com\/acme\/vpc\/aws" .* which matches the given version constraint\. The newest available version is 1\.2\.0/,
    );
    expect(failedInits).toEqual([]);
    expect([unpinned.direct.provider, unpinned.direct.module, unpinned.mirror.provider]).toEqual(['1.2.0', '1.2.0', '1.2.0']);
    log.push(
      `  withdrawn 1.3.0 while B read it: installed during the change ${withdrawing.direct.provider}/${withdrawing.mirror.provider}/${withdrawing.direct.module}`,
    );
    log.push(`  pinned 1.3.0 at B after a minute: ${flat(pinned.output).match(/no available releases match the given constraints [\d.]+/)?.[0]}`);
    await s.expectNoFailures();
    const { invocations, refusedWrites } = await s.harness.state();
    log.push(
      `  ${invocations.length} Worker invocations, no 5xx, no limit passed; KV writes refused (and retried) by the one-write-a-second rule: ${JSON.stringify(refusedWrites)}`,
    );
  }, 120_000);
});

describe.skipIf(missing('terraform', terraform))('a read token revoked while terraform uses it (private mode, production harness)', () => {
  const s = new Scenario();
  let reader = '';
  let started = 0;
  const log: string[] = [];

  beforeAll(async () => {
    started = performance.now();
    await s.start('production-revoke', { ACCESS: 'private', URL_SIGNING_SECRET: SECRET }, async () => {
      reader = await s.token('create', '--namespace', 'acme', '--name', 'reader');
    });
    await s.publishAtA('publish-module', [await s.moduleDir('1.0.0'), '--namespace', 'acme', '--name', 'vpc', '--system', 'aws', '--version', '1.0.0']);
  }, 120_000);
  afterAll(async () => {
    await s.stop();
    console.log(`production-publish-while-polling (private): ${((performance.now() - started) / 1000).toFixed(1)} s with setup\n${log.join('\n')}`);
  });

  it('refused at once where never read (A); accepted from B’s copy right after, refused there within 60 s', async () => {
    const using = await s.init('B', 'module', '>= 1.0.0', reader);
    expect(using.ok, using.output).toBe(true);
    expect(using.module).toBe('1.0.0');

    await s.token('revoke', 'reader');
    const [atA, atB] = await Promise.all([s.init('A', 'module', '>= 1.0.0', reader), s.init('B', 'module', '>= 1.0.0', reader)]);
    expect(atA.ok, atA.output).toBe(false);
    expect(flat(atA.output)).toContain(REFUSED);
    // The documented window: a location that read the record keeps accepting it until its copy expires.
    expect(atB.ok, atB.output).toBe(true);

    // B on the harness clock, every 10 s: accepted, then refused, and never later than 60 s after the revocation.
    let acceptedUntil = 0;
    for (let t = 10_000; t <= 60_000; t += 10_000) {
      await s.harness.advanceClock(10_000);
      const status = (await s.at('B', MODULE_LIST, reader)).status;
      expect([200, 401], `${t} ms`).toContain(status);
      if (status === 200) {
        expect(acceptedUntil, 'accepted again after a refusal').toBe(t - 10_000);
        acceptedUntil = t;
      }
    }
    expect(acceptedUntil).toBeLessThan(60_000);
    const after = await s.init('B', 'module', '>= 1.0.0', reader);
    expect(after.ok, after.output).toBe(false);
    expect(flat(after.output)).toContain(REFUSED);
    log.push(
      `  revoked read token: refused at A at once; accepted at B for the next ${acceptedUntil / 1000} s of the harness clock (B's copy), refused from ${acceptedUntil / 1000 + 10} s (bound 60 s); terraform init at B after 60 s: refused`,
    );
    await s.expectNoFailures();
  }, 120_000);
});
