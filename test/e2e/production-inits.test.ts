import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StaticUpstream, releaseUpstreamGpgKey } from '../scripts/mirror/upstream';
import { configPath, runScript } from '../scripts/helpers';
import { get } from './http';
import { ModuleUpstream } from './module-upstream';
import { startHarnessServer, type HarnessServer, type HarnessState } from './production-dev';
import { makeCertificate, type Certificate } from './server';
import { terraformInit } from './terraform-init';
import { missing, terraform } from '../tools';
import { MAX_OPEN_CONNECTIONS } from '../fixtures/production/rules';

afterAll(releaseUpstreamGpgKey);

/**
 * Issue 34, end to end under Cloudflare's production rules: `wrangler dev` with the production harness around
 * the registry Worker (test/fixtures/production/dev-entry.ts: each location its own KV read cache and edge
 * cache, one write a second per KV key, the Free plan's per-invocation limits), three locations A, B, C on
 * three HTTPS ports, and 20 concurrent cold `terraform init`s (real terraform 1.11) spread over them, each of
 * one of 5 versions of a pull-through provider (network_mirror) and of a proxied module (a `host` block),
 * all starting from an EMPTY registry holding only a policy. Then, at every location, every version listed
 * (the mirror's index.json, the module's versions) must install there.
 */
const goPlatform = `${process.platform}_${process.arch === 'x64' ? 'amd64' : process.arch}`;
const VERSIONS = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '1.4.0'];
const LOCATIONS = ['A', 'B', 'C'];
const INITS = 20;
const PROVIDER_HOST = 'upstream.test';
const HOST = 'registry.example.com';
const UPSTREAM = 'registry.upstream.test';
const NS = 'terraform-aws-modules';
const FREE = { storageOperations: 1000, subrequests: 50 };

if (!terraform) console.warn('e2e production-inits: skipping: no terraform binary in /usr/local/bin or /usr/bin');

describe.skipIf(missing('terraform', terraform))('20 concurrent cold terraform inits at 3 locations, under the production harness', () => {
  let root: string;
  let certificate: Certificate;
  let provider: StaticUpstream;
  let modules: ModuleUpstream;
  let harness: HarnessServer;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'edge-registry-e2e-production-'));
    const state = join(root, 'state');
    provider = await StaticUpstream.start({
      namespace: 'acme',
      type: 'thing',
      plainHttp: true,
      releases: VERSIONS.map((version) => ({ version, platforms: [goPlatform] })),
    });
    modules = await ModuleUpstream.start([
      {
        namespace: NS,
        name: 'vpc',
        system: 'aws',
        versions: VERSIONS.map((version) => ({ version, source: `git::https://github.com/${NS}/terraform-aws-vpc.git?ref=v${version}` })),
      },
    ]);
    await writeFile(
      join(root, 'policy.json'),
      JSON.stringify({
        platforms: [goPlatform],
        providers: [{ source: `${PROVIDER_HOST}/acme/*`, versions: '>= 1.0.0' }],
        modules: [{ source: `${UPSTREAM}/${NS}/*/*`, versions: '>= 1.0.0' }],
        hosts: {
          [PROVIDER_HOST]: { 'providers.v1': `${provider.origin}/v1/providers/` },
          [UPSTREAM]: { 'modules.v1': `${modules.origin}/v1/modules/` },
          'codeload.github.com': { archives: `${modules.origin}/codeload/` },
        },
      }),
    );
    const set = await runScript('mirror', ['policy', 'set', join(root, 'policy.json'), '--persist-to', state, '--wrangler-config', configPath]);
    expect(set.code, set.stderr).toBe(0);
    certificate = makeCertificate(root);
    harness = await startHarnessServer({
      stateDir: state,
      dir: root,
      certificate,
      locations: LOCATIONS,
      vars: { PULL_TIMEOUT_SECONDS: '20', PULL_LIST_SECONDS: '2', PULL_REFRESH_SECONDS: '3600' },
    });
  });
  afterAll(async () => {
    await harness?.stop();
    await provider?.stop();
    await modules?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** A user's working directory at `location`: one provider version through the location's network mirror, one module version through a host block. */
  async function workdir(i: number, location: string, version: string): Promise<string> {
    const origin = harness.origins[location]!;
    const work = join(root, `init-${i}`);
    await mkdir(work, { recursive: true });
    await writeFile(
      join(work, 'main.tf'),
      `terraform {\n  required_providers {\n    thing = {\n      source  = "${PROVIDER_HOST}/acme/thing"\n      version = "${version}"\n    }\n  }\n}\n\nmodule "vpc" {\n  source  = "${HOST}/${NS}/vpc/aws"\n  version = "${version}"\n  name    = "main"\n}\n`,
    );
    await writeFile(
      join(work, 'cli.tfrc'),
      `provider_installation {\n  network_mirror {\n    url = "${origin}/v1/mirror/"\n  }\n}\n\nhost "${HOST}" {\n  services = {\n    "modules.v1" = "${origin}/v1/modules/"\n  }\n}\n`,
    );
    return work;
  }

  const at = (location: string, path: string) =>
    get(new URL(path, `${harness.origins[location]}/`).href, { ca: certificate.pem, headers: { 'accept-encoding': 'identity' } });

  /** What a client at `location` sees: every version listed by the mirror and the module registry there installs there. */
  async function listedInstallFailures(location: string): Promise<string[]> {
    const failures: string[] = [];
    const base = `/v1/mirror/${PROVIDER_HOST}/acme/thing`;
    const index = await at(location, `${base}/index.json`);
    if (index.status !== 200) return [`${location}: index.json ${index.status}`];
    for (const version of Object.keys((JSON.parse(index.body.toString('utf8')) as { versions: Record<string, unknown> }).versions)) {
      const doc = await at(location, `${base}/${version}.json`);
      if (doc.status !== 200) {
        failures.push(`${location}: mirror lists ${version}, ${version}.json answers ${doc.status}`);
        continue;
      }
      for (const { url } of Object.values((JSON.parse(doc.body.toString('utf8')) as { archives: Record<string, { url: string }> }).archives)) {
        const archive = await at(location, new URL(url, `${harness.origins[location]}${base}/`).pathname);
        if (archive.status !== 200) failures.push(`${location}: mirror ${version} archive answers ${archive.status}`);
      }
    }
    const list = await at(location, `/v1/modules/${NS}/vpc/aws/versions`);
    if (list.status !== 200) return [...failures, `${location}: module versions ${list.status}`];
    const listed = (JSON.parse(list.body.toString('utf8')) as { modules: { versions: { version: string }[] }[] }).modules[0]!.versions;
    for (const { version } of listed) {
      const download = await at(location, `/v1/modules/${NS}/vpc/aws/${version}/download`);
      const target = download.headers['x-terraform-get'];
      if (download.status !== 204 || typeof target !== 'string') {
        failures.push(`${location}: module lists ${version}, its download answers ${download.status}`);
        continue;
      }
      const archive = await at(location, target);
      if (archive.status !== 200) failures.push(`${location}: module ${version} archive answers ${archive.status}`);
    }
    return failures;
  }

  it('0 failed inits, no 5xx, no invocation over the Free plan limits; every version listed at a location installs there', async () => {
    const works = await Promise.all(Array.from({ length: INITS }, (_, i) => workdir(i, LOCATIONS[i % LOCATIONS.length]!, VERSIONS[i % VERSIONS.length]!)));
    const started = performance.now();
    const results = await Promise.all(works.map((work) => terraformInit(work, certificate.certPath, 180_000)));
    const wallMs = performance.now() - started;
    const failed = results.filter((r) => !r.ok);
    expect(failed.map((r) => r.output).join('\n---\n'), harness.server.log().slice(-4000)).toBe('');
    results.forEach((result, i) => expect(result.modules.find((m) => m.Key === 'vpc')?.Version).toBe(VERSIONS[i % VERSIONS.length]));

    const afterInits: HarnessState = await harness.state();
    const listed = (await Promise.all(LOCATIONS.map(listedInstallFailures))).flat();
    expect(listed).toEqual([]);

    // Every location again once each location's KV copies have expired (a minute on the harness clock): nothing
    // pulled was lost to a refused write, every version is listed everywhere, and installs.
    await harness.advanceClock(61_000);
    expect((await Promise.all(LOCATIONS.map(listedInstallFailures))).flat()).toEqual([]);
    for (const location of LOCATIONS) {
      const index = await at(location, `/v1/mirror/${PROVIDER_HOST}/acme/thing/index.json`);
      expect(Object.keys((JSON.parse(index.body.toString('utf8')) as { versions: Record<string, unknown> }).versions).sort()).toEqual(VERSIONS);
      const list = await at(location, `/v1/modules/${NS}/vpc/aws/versions`);
      const versions = (JSON.parse(list.body.toString('utf8')) as { modules: { versions: { version: string }[] }[] }).modules[0]!.versions;
      expect(versions.map((v) => v.version).sort()).toEqual(VERSIONS);
    }

    const { invocations, refusedWrites, daily } = await harness.state();
    const fiveHundreds = invocations.filter((i) => i.status >= 500);
    expect(fiveHundreds).toEqual([]);
    expect(invocations.filter((i) => i.exceeded !== null)).toEqual([]);
    const storage = (c: Record<string, number>) => c.kvReads! + c.kvWrites! + c.kvDeletes! + c.kvLists! + c.r2ClassA! + c.r2ClassB! + c.r2Deletes!;
    const most = (of: (c: Record<string, number>) => number, list = invocations) => Math.max(0, ...list.map((i) => of(i.counts)));
    expect(most(storage)).toBeLessThanOrEqual(FREE.storageOperations);
    expect(most((c) => c.subrequests!)).toBeLessThanOrEqual(FREE.subrequests);
    // Cloudflare opens at most 6 connections per invocation and queues further fetches (the harness does too):
    // the pull-through (mirror) and the module proxy never have more than that waiting at once.
    const upstream = (prefix: string) => invocations.filter((i) => i.path.startsWith(prefix) && i.counts.subrequests! > 0);
    const pulls = upstream('/v1/mirror/');
    const proxied = upstream('/v1/modules/');
    expect(pulls.length).toBeGreaterThan(0);
    expect(proxied.length).toBeGreaterThan(0);
    const connections = (list: typeof invocations) => most((c) => c.connections!, list);
    expect(connections(pulls)).toBeLessThanOrEqual(MAX_OPEN_CONNECTIONS);
    expect(connections(proxied)).toBeLessThanOrEqual(MAX_OPEN_CONNECTIONS);
    expect(most((c) => c.queuedFetches!)).toBe(0);
    const inits = afterInits.invocations.filter((i) => !i.path.startsWith('/.well-known/'));
    const refused = Object.values(refusedWrites).reduce((a, b) => a + b, 0);
    console.log(
      [
        `production-inits: ${INITS} concurrent cold terraform inits at ${LOCATIONS.length} locations (${VERSIONS.length} versions of a pull-through provider and of a proxied module)`,
        `  wall time ${(wallMs / 1000).toFixed(1)} s; 0 failed; Worker invocations ${afterInits.invocations.length} during the inits (${inits.length} past discovery), ${invocations.length} with the listed-installs checks`,
        `  per invocation at most ${most(storage, afterInits.invocations)} storage operations (limit ${FREE.storageOperations}), ${most((c) => c.subrequests!, afterInits.invocations)} subrequests (limit ${FREE.subrequests} on Free)`,
        `  fetches waiting for headers at once, per invocation: at most ${connections(pulls)} (pull-through, ${pulls.length} invocations with subrequests), ${connections(proxied)} (module proxy, ${proxied.length}); limit ${MAX_OPEN_CONNECTIONS}, none queued`,
        `  KV over the run: ${daily.reads} reads, ${daily.writes} write attempts, ${refused} refused by the one-write-a-second rule (${JSON.stringify(refusedWrites)})`,
      ].join('\n'),
    );
  });
});
