import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allowanceFor, formatPolicy, parsePolicy } from '../../../src/protocol/mirror-policy';
import { configPath, runScript, tempDir } from '../helpers';
import { StaticUpstream, releaseUpstreamGpgKey } from './upstream';

// The upstream's GnuPG home and agent go with this file.
afterAll(releaseUpstreamGpgKey);

/**
 * The pull-through policy: what parsePolicy accepts (mirror.json plus `*`
 * patterns and `hosts`), each refusal with the path and the fix, what a
 * policy allows, and `npm run mirror -- policy set|show|clear` on a local state.
 */
const good = {
  platforms: ['linux_amd64', 'darwin_arm64'],
  providers: [
    { source: 'registry.terraform.io/hashicorp/*', versions: '>= 4' },
    { source: 'upstream.test/acme/thing', versions: '~> 1.0', platforms: ['linux_amd64'] },
    { source: 'acme/other', versions: '2.0.0' },
  ],
  hosts: { 'upstream.test': { 'providers.v1': 'http://127.0.0.1:8080/v1/providers' } },
};
const parse = (value: unknown) => parsePolicy(JSON.stringify(value), 'mirror.json');

describe('parsePolicy', () => {
  it('reads mirror.json with patterns and hosts, and formats it back to the same policy', () => {
    const policy = parse(good);
    expect(policy.rules.map((r) => [r.hostname, r.namespace, r.type])).toEqual([
      ['registry.terraform.io', 'hashicorp', null],
      ['upstream.test', 'acme', 'thing'],
      ['registry.terraform.io', 'acme', 'other'],
    ]);
    expect(policy.hosts['upstream.test']!['providers.v1']).toBe('http://127.0.0.1:8080/v1/providers/');
    expect(parsePolicy(formatPolicy(policy), 'again')).toEqual(policy);
  });

  it("today's mirror.json (no patterns, no hosts) is a policy as it is", () => {
    expect(parse({ providers: [{ source: 'hashicorp/random', versions: '~> 3.5' }] }).rules).toHaveLength(1);
  });

  it('allows what a matching rule allows: versions, and the union of platforms of the rules that allow a version', () => {
    const policy = parse({
      providers: [
        { source: 'registry.terraform.io/hashicorp/*', versions: '>= 4', platforms: ['linux_amd64'] },
        { source: 'registry.terraform.io/hashicorp/tls', versions: '>= 4.1', platforms: ['darwin_arm64'] },
      ],
    });
    const tls = allowanceFor(policy, { hostname: 'registry.terraform.io', namespace: 'hashicorp', type: 'tls' })!;
    expect(tls.allows('4.0.0')).toBe(true);
    expect(tls.allows('3.9.0')).toBe(false);
    expect([...tls.platformsFor('4.0.0')!]).toEqual(['linux_amd64']);
    expect([...tls.platformsFor('4.1.0')!].sort()).toEqual(['darwin_arm64', 'linux_amd64']);
    expect(allowanceFor(policy, { hostname: 'registry.terraform.io', namespace: 'acme', type: 'tls' })).toBeNull();
    expect(allowanceFor(policy, { hostname: 'registry.opentofu.org', namespace: 'hashicorp', type: 'tls' })).toBeNull();
    const every = allowanceFor(parse({ providers: [{ source: 'acme/*', versions: '' }] }), {
      hostname: 'registry.terraform.io',
      namespace: 'acme',
      type: 'x',
    })!;
    expect(every.platformsFor('1.0.0')).toBeNull();
    // Pre-releases only when named exactly, as in Terraform.
    expect(every.allows('1.0.0-beta')).toBe(false);
  });

  const refusals: [string, unknown, RegExp][] = [
    ['not JSON', '{', /mirror\.json: not JSON/],
    ['not an object', [], /expected an object with a "providers" array/],
    [
      'an unknown top-level field',
      { ...good, platform: ['linux_amd64'] },
      /mirror\.json: unknown field "platform" \(allowed: platforms, providers, modules, hosts\)/,
    ],
    ['no providers', { providers: [] }, /"providers" must be a non-empty array/],
    [
      'an unknown entry field',
      { providers: [{ source: 'a/b', versions: '1.0.0', version: '1' }] },
      /providers\[0\]: unknown field "version" \(allowed: source, versions, platforms\)/,
    ],
    ['an entry without versions', { providers: [{ source: 'a/b' }] }, /providers\[0\]: "versions" .* is required/],
    ['an entry without source', { providers: [{ versions: '1.0.0' }] }, /providers\[0\]: "source" .* is required/],
    ['a malformed constraint', { providers: [{ source: 'a/b', versions: '>> 1' }] }, /providers\[0\]\.versions: /],
    ['a wildcard hostname', { providers: [{ source: '*/hashicorp/aws', versions: '1.0.0' }] }, /the hostname cannot be a pattern/],
    ['a partial wildcard', { providers: [{ source: 'hashicorp/aws*', versions: '1.0.0' }] }, /\* stands for a whole type, not part of one/],
    ['a source with four parts', { providers: [{ source: 'a/b/c/d', versions: '1.0.0' }] }, /must be HOST\/NAMESPACE\/TYPE or NAMESPACE\/TYPE/],
    ['an invalid name', { providers: [{ source: 'a/b_c', versions: '1.0.0' }] }, /providers\[0\]\.source: type "b_c" is invalid/],
    ['an unknown platform', { platforms: ['linux_amd65'], providers: [{ source: 'a/b', versions: '1' }] }, /platforms: platform "linux_amd65": unknown arch/],
    [
      "an entry's unknown platform",
      { providers: [{ source: 'a/b', versions: '1', platforms: ['plan9'] }] },
      /providers\[0\]\.platforms: platform "plan9" must look like os_arch/,
    ],
    ['hosts not an object', { ...good, hosts: [] }, /"hosts" must be an object/],
    [
      'an unknown service',
      { ...good, hosts: { 'up.test': { 'provider.v1': 'https://up.test/' } } },
      /hosts\["up\.test"\]: unknown field "provider\.v1" \(allowed: providers\.v1, modules\.v1, archives\)/,
    ],
    ['a host that is not a hostname', { ...good, hosts: { 'up test': {} } }, /hosts\["up test"\]: hostname "up test" is not a valid registry hostname/],
    ['a relative service URL', { ...good, hosts: { 'up.test': { 'providers.v1': '/v1/providers/' } } }, /is not an absolute URL/],
    ['plain http to another machine', { ...good, hosts: { 'up.test': { 'providers.v1': 'http://up.test/v1/providers/' } } }, /http:\/\/up\.test is not https/],
    [
      'credentials in a service URL',
      { ...good, hosts: { 'up.test': { 'providers.v1': 'https://u:p@up.test/v1/providers/' } } },
      /credentials in the URL are not allowed/,
    ],
  ];
  for (const [what, value, message] of refusals) {
    it(`refuses ${what}`, () => {
      expect(() => (typeof value === 'string' ? parsePolicy(value, 'mirror.json') : parse(value))).toThrow(message);
    });
  }
});

describe('npm run mirror -- policy', () => {
  const { dir, cleanup } = tempDir('policy');
  afterAll(cleanup);
  const state = ['--persist-to', join(dir, 'state'), '--wrangler-config', configPath];

  it('set stores it, show prints it, clear removes it; a bad file is refused and changes nothing', async () => {
    const none = await runScript('mirror', ['policy', 'show', ...state]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stderr).toMatch(/no pull-through policy/);

    writeFileSync(join(dir, 'mirror.json'), JSON.stringify(good));
    const set = await runScript('mirror', ['policy', 'set', join(dir, 'mirror.json'), ...state]);
    expect(set.code, set.stderr).toBe(0);
    const shown = await runScript('mirror', ['policy', 'show', ...state]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(parsePolicy(shown.stdout, 'shown')).toEqual(parse(good));

    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...good, hostz: {} }));
    const bad = await runScript('mirror', ['policy', 'set', join(dir, 'bad.json'), ...state]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/bad\.json: unknown field "hostz"/);
    expect((await runScript('mirror', ['policy', 'show', ...state])).stdout).toBe(shown.stdout);

    const usage = await runScript('mirror', ['policy', 'sett', ...state]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/unknown policy action "sett"/);

    expect((await runScript('mirror', ['policy', 'clear', ...state])).code).toBe(0);
    expect((await runScript('mirror', ['policy', 'show', ...state])).stderr).toMatch(/no pull-through policy/);
  });
});

describe('npm run mirror -- sync --config with a policy file', () => {
  const { dir, cleanup } = tempDir('policy-sync');
  let upstream: StaticUpstream | undefined;
  afterAll(async () => {
    await upstream?.stop();
    cleanup();
  });

  it("syncs the exact entries through the policy's hosts, skips the patterns and says so", async () => {
    upstream = await StaticUpstream.start({ namespace: 'acme', type: 'thing', plainHttp: true, releases: [{ version: '1.0.0', platforms: ['linux_amd64'] }] });
    writeFileSync(
      join(dir, 'mirror.json'),
      JSON.stringify({
        platforms: ['linux_amd64'],
        providers: [
          { source: 'upstream.test/acme/thing', versions: '1.0.0' },
          { source: 'upstream.test/acme/*', versions: '>= 1' },
        ],
        hosts: { 'upstream.test': { 'providers.v1': `${upstream.origin}/v1/providers/` } },
      }),
    );
    const state = ['--persist-to', join(dir, 'state'), '--wrangler-config', configPath];
    const synced = await runScript('mirror', ['sync', '--config', join(dir, 'mirror.json'), '--json', ...state], { TF_CLI_CONFIG_FILE: '/dev/null' });
    expect(synced.code, synced.stderr).toBe(0);
    expect(synced.stderr).toMatch(/providers\[1\] \(upstream\.test\/acme\/\*\) is a pattern: pull-through only, sync needs a full address — skipped/);
    const summary = JSON.parse(synced.stdout) as { providers: { address: string; status: string }[] };
    expect(summary.providers).toEqual([expect.objectContaining({ address: 'upstream.test/acme/thing', status: 'mirrored' })]);
    expect(upstream.archiveRequests()).toBe(1);
  });
});
