import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllowList } from '../../../scripts/lib/mirror/allow-list';
import { hostEnvName, parseCliConfigHosts, terraformCredentials } from '../../../scripts/lib/mirror/cli-config';
import { parseRetryAfter } from '../../../scripts/lib/mirror/upstream-http';
import { tempDir } from '../helpers';

/** Where upstream tokens come from (as Terraform looks), the allow-list format, Retry-After. */
const { dir, cleanup } = tempDir('mirror-credentials');
afterAll(cleanup);

describe('upstream credentials', () => {
  it('names TF_TOKEN_ variables as Terraform does (dots as _, dashes as __; none for a host with a port)', () => {
    expect(hostEnvName('registry.terraform.io')).toBe('TF_TOKEN_registry_terraform_io');
    expect(hostEnvName('my-registry.example.com')).toBe('TF_TOKEN_my__registry_example_com');
    expect(hostEnvName('localhost:8443')).toBeNull();
  });

  it('takes TF_TOKEN_<host> first, then credentials blocks of TF_CLI_CONFIG_FILE, then credentials.tfrc.json', () => {
    const config = join(dir, 'cli.tfrc');
    writeFileSync(
      config,
      [
        '# comment: credentials "commented.example.com" { token = "no" }',
        'credentials "app.example.com" {',
        '  token = "from-config"',
        '}',
        'credentials "Both.Example.com" { token = "config-loses" }',
        'credentials "localhost:8443" {\n  token = "port-token"\n}',
      ].join('\n'),
    );
    mkdirSync(join(dir, '.terraform.d'), { recursive: true });
    writeFileSync(join(dir, '.terraform.d', 'credentials.tfrc.json'), JSON.stringify({ credentials: { 'login.example.com': { token: 'from-login' } } }));
    const source = terraformCredentials({ HOME: dir, TF_CLI_CONFIG_FILE: config, TF_TOKEN_both_example_com: 'env-wins' });
    expect(source.tokenFor('app.example.com')).toBe('from-config');
    expect(source.tokenFor('both.example.com')).toBe('env-wins');
    expect(source.describe('both.example.com')).toBe('TF_TOKEN_both_example_com');
    expect(source.tokenFor('localhost:8443')).toBe('port-token');
    expect(source.tokenFor('login.example.com')).toBe('from-login');
    expect(source.tokenFor('commented.example.com')).toBeUndefined();
    expect(source.tokenFor('other.example.com')).toBeUndefined();
  });

  it('reads ~/.terraformrc when TF_CLI_CONFIG_FILE is not set', () => {
    writeFileSync(join(dir, '.terraformrc'), 'credentials "rc.example.com" {\n  token = "from-rc"\n}\n');
    expect(terraformCredentials({ HOME: dir }).tokenFor('rc.example.com')).toBe('from-rc');
  });
});

describe('host blocks', () => {
  it('reads providers.v1 of host blocks, which replace discovery for that name', () => {
    const text =
      '# alias\nhost "Upstream.Test" {\n  services = {\n    "providers.v1" = "https://localhost:8443/v1/providers/",\n    "modules.v1" = "/m/"\n  }\n}\n';
    expect(parseCliConfigHosts(text).get('upstream.test')).toEqual({ 'providers.v1': 'https://localhost:8443/v1/providers/', 'modules.v1': '/m/' });
    const config = join(dir, 'hosts.tfrc');
    writeFileSync(config, text);
    expect(terraformCredentials({ HOME: dir, TF_CLI_CONFIG_FILE: config }).providersServiceFor('upstream.test')).toBe('https://localhost:8443/v1/providers/');
  });
});

describe('mirror.json', () => {
  it('reads entries with their defaults; a bare NS/TYPE is on registry.terraform.io', () => {
    const requests = parseAllowList(
      JSON.stringify({
        platforms: ['linux_amd64'],
        providers: [
          { source: 'hashicorp/random', versions: '~> 3.5' },
          { source: 'registry.example.net/acme/thing', versions: '1.4.2', platforms: ['darwin_arm64', 'windows_amd64'] },
        ],
      }),
      'mirror.json',
    );
    expect(requests).toEqual([
      {
        address: { hostname: 'registry.terraform.io', namespace: 'hashicorp', type: 'random' },
        constraints: '~> 3.5',
        platforms: [{ os: 'linux', arch: 'amd64' }],
      },
      {
        address: { hostname: 'registry.example.net', namespace: 'acme', type: 'thing' },
        constraints: '1.4.2',
        platforms: [
          { os: 'darwin', arch: 'arm64' },
          { os: 'windows', arch: 'amd64' },
        ],
      },
    ]);
  });

  it.each([
    ['not json', '{', /mirror\.json: not JSON/],
    ['no providers', '{}', /"providers" must be a non-empty array/],
    ['unknown top field', '{"providers":[{"source":"a/b","versions":"1.0.0"}],"platform":["linux_amd64"]}', /unknown field "platform"/],
    ['unknown entry field', '{"providers":[{"source":"a/b","version":"1.0.0"}]}', /providers\[0\]: unknown field "version"/],
    ['missing versions', '{"providers":[{"source":"a/b"}]}', /providers\[0\]: "versions" .* is required/],
    ['bad constraint', '{"providers":[{"source":"a/b","versions":"~> one"}]}', /providers\[0\]: version constraint "~> one" is not valid/],
    ['bad source', '{"providers":[{"source":"a/b/c/d","versions":"1.0.0"}]}', /providers\[0\]: provider address "a\/b\/c\/d"/],
    ['bad platform', '{"providers":[{"source":"a/b","versions":"1.0.0","platforms":["linux"]}]}', /providers\[0\]\.platforms: /],
  ])('refuses %s, naming the entry and field', (_name, text, message) => {
    expect(() => parseAllowList(text, 'mirror.json')).toThrow(message);
  });
});

describe('Retry-After', () => {
  it('reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 0, 10)).toUTCString(), Date.UTC(2030, 0, 1))).toBe(10_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(null)).toBeNull();
  });
});
