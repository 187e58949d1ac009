import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  parseKvNamespaces,
  parseLifecycleRules,
  parseR2Buckets,
  parseSecrets,
  parseWhoami,
  type WranglerResult,
} from '../../../scripts/lib/deploy/wrangler-output';
import { PENDING_KV_ID, PlanError, checkAuth, planDeploy, type DeployOptions, type Observed } from '../../../scripts/lib/deploy/plan';
import { LIFECYCLE_RULES } from '../../../scripts/lib/deploy/lifecycle-rules';
import { editProductionConfig, type ProductionConfig } from '../../../scripts/lib/deploy/production-config';

/** What wrangler 4.86 printed (see recorded/README.md). */
function recorded(name: string): WranglerResult {
  const file = (ext: string) => readFileSync(join(import.meta.dirname, 'recorded', `${name}.${ext}`), 'utf8');
  return { stdout: file('stdout'), stderr: file('stderr'), status: Number(file('status').trim()) };
}

const root = join(import.meta.dirname, '..', '..', '..');
const shippedToml = readFileSync(join(root, 'wrangler.toml'), 'utf8');

describe('reading wrangler 4.86 output', () => {
  it('whoami --json: logged in with its accounts, or logged out (exit 1)', () => {
    expect(parseWhoami(recorded('whoami'))).toEqual({
      loggedIn: true,
      authType: 'User API Token',
      email: 'ops@acme.com',
      accounts: [{ id: '0123456789abcdef0123456789abcdef', name: "Acme Corp's Account" }],
    });
    const out = recorded('whoami-logged-out');
    expect(out.status).toBe(1);
    expect(parseWhoami(out)).toEqual({ loggedIn: false });
  });

  it('kv namespace list: ids and titles, also when empty', () => {
    expect(parseKvNamespaces(recorded('kv-namespace-list'))).toEqual([
      { id: '9f0c5a3e2b1d4c6e8a7f9b0d1c2e3f4a', title: 'edge-registry' },
      { id: '1a2b3c4d5e6f708192a3b4c5d6e7f809', title: 'other-app-cache' },
    ]);
    expect(parseKvNamespaces(recorded('kv-namespace-list-empty'))).toEqual([]);
  });

  it('r2 bucket list: the names after the banner, also when empty', () => {
    expect(parseR2Buckets(recorded('r2-bucket-list'))).toEqual(['edge-registry', 'logs-archive']);
    expect(parseR2Buckets(recorded('r2-bucket-list-empty'))).toEqual([]);
  });

  it('secret list: names; a Worker never deployed is told apart from a failure', () => {
    expect(parseSecrets(recorded('secret-list'))).toEqual({ workerExists: true, names: ['URL_SIGNING_SECRET'] });
    expect(parseSecrets(recorded('secret-list-empty'))).toEqual({ workerExists: true, names: [] });
    expect(parseSecrets(recorded('secret-list-no-worker'))).toEqual({ workerExists: false });
    expect(() => parseSecrets({ status: 1, stdout: '', stderr: 'Authentication error [code: 10000]' })).toThrow(/exit status 1/);
  });

  it('r2 bucket lifecycle list: each rule\'s name and prefix ("(all prefixes)" is none), Cloudflare\'s default rule included', () => {
    expect(parseLifecycleRules(recorded('r2-lifecycle-list-default'))).toEqual([{ name: 'Default Multipart Abort Rule', prefix: '' }]);
    expect(parseLifecycleRules(recorded('r2-lifecycle-list'))).toEqual([
      { name: 'Default Multipart Abort Rule', prefix: '' },
      { name: 'edge-registry-uploads', prefix: '.uploads/' },
      { name: 'edge-registry-login-codes', prefix: '.login-codes/' },
    ]);
    expect(
      parseLifecycleRules({ status: 0, stdout: "Listing lifecycle rules for bucket 'b'...\nThere are no lifecycle rules for bucket 'b'.\n", stderr: '' }),
    ).toEqual([]);
    expect(() => parseLifecycleRules({ status: 0, stdout: '[]', stderr: '' })).toThrow(/unexpected output/);
    // What `lifecycle add` printed when it added a rule (exit 0).
    expect(recorded('r2-lifecycle-add').stdout).toContain("Added lifecycle rule 'edge-registry-uploads' to bucket 'edge-registry'");
  });

  it('refuses output it does not recognise instead of guessing', () => {
    expect(() => parseKvNamespaces({ status: 0, stdout: 'Something else entirely', stderr: '' })).toThrow(/no JSON/);
    expect(() => parseR2Buckets({ status: 0, stdout: '[]', stderr: '' })).toThrow(/unexpected output/);
    expect(() => parseWhoami({ status: 0, stdout: '{"user":1}', stderr: '' })).toThrow(/unexpected object/);
  });
});

const shippedConfig: ProductionConfig = {
  workerName: 'edge-registry',
  kvNamespaceId: '00000000000000000000000000000000',
  bucketName: 'edge-registry',
  hostname: 'registry.example.com',
  routes: [],
};
const options: DeployOptions = {
  env: 'production',
  configPath: 'wrangler.toml',
  hostname: 'registry.acme.com',
  kvTitle: 'edge-registry',
  bucketName: null,
  smokeUrl: null,
};
const account = { loggedIn: true as const, authType: 'OAuth Token', email: 'ops@acme.com', accounts: [{ id: 'a1', name: 'Acme' }] };

function observed(overrides: Partial<Observed> = {}): Observed {
  return {
    auth: account,
    accountIdFromEnv: null,
    kvNamespaces: [],
    buckets: [],
    // The rules the deploy creates are there (the tests of the lifecycle steps say otherwise).
    lifecycleRules: LIFECYCLE_RULES.map(({ name, prefix }) => ({ name, prefix })),
    secrets: { workerExists: false },
    config: shippedConfig,
    configText: shippedToml,
    ...overrides,
  };
}

describe('the deploy plan', () => {
  it('on an empty account: create both, write the config, deploy with a new signing secret, smoke-test', () => {
    const steps = planDeploy(options, observed({ lifecycleRules: null }));
    expect(steps.map((s) => s.kind)).toEqual([
      'create-kv',
      'create-bucket',
      'add-lifecycle-rule',
      'add-lifecycle-rule',
      'add-lifecycle-rule',
      'add-lifecycle-rule',
      'write-config',
      'deploy',
      'smoke-test',
    ]);
    steps.splice(2, 4);
    expect(steps[0]).toMatchObject({ command: ['kv', 'namespace', 'create', 'edge-registry'] });
    expect(steps[1]).toMatchObject({ command: ['r2', 'bucket', 'create', 'edge-registry'] });
    const write = steps[2]!;
    if (write.kind !== 'write-config') throw new Error('expected write-config');
    expect(write.changes).toEqual(
      expect.arrayContaining([
        { section: 'env.production', key: 'routes', from: null, to: '[{ pattern = "registry.acme.com", custom_domain = true }]' },
        { section: 'env.production.vars', key: 'REGISTRY_HOSTNAME', from: '"registry.example.com"', to: '"registry.acme.com"' },
        { section: 'env.production.kv_namespaces', key: 'id', from: '"00000000000000000000000000000000"', to: `"${PENDING_KV_ID}"` },
      ]),
    );
    expect(steps[3]).toMatchObject({
      kind: 'deploy',
      withNewSigningSecret: true,
      command: expect.arrayContaining(['deploy', '--env', 'production', '--secrets-file']),
    });
    expect(steps[4]).toMatchObject({ url: 'https://registry.acme.com/.well-known/terraform.json' });
  });

  it('reuses a namespace and a bucket that exist by name, and writes their ids', () => {
    const steps = planDeploy(
      options,
      observed({
        kvNamespaces: [
          { id: 'other', title: 'other-app' },
          { id: 'kv123', title: 'edge-registry' },
        ],
        buckets: ['edge-registry'],
      }),
    );
    expect(steps.map((s) => s.kind)).toEqual(['write-config', 'deploy', 'smoke-test']);
    const write = steps[0]!;
    if (write.kind !== 'write-config') throw new Error('expected write-config');
    expect(write.text).toContain('id = "kv123"');
  });

  it('keeps the configured namespace when the account has it, whatever its title', () => {
    const config = { ...shippedConfig, kvNamespaceId: 'mine', hostname: 'registry.acme.com', routes: [{ pattern: 'registry.acme.com', custom_domain: true }] };
    const steps = planDeploy(
      { ...options, hostname: null },
      observed({
        config,
        kvNamespaces: [{ id: 'mine', title: 'my-own-title' }],
        buckets: ['edge-registry'],
        secrets: { workerExists: true, names: ['URL_SIGNING_SECRET'] },
      }),
    );
    expect(steps.map((s) => s.kind)).toEqual(['deploy', 'smoke-test']);
    expect(steps[0]).toMatchObject({ withNewSigningSecret: false });
    expect((steps[0] as { command: string[] }).command).not.toContain('--secrets-file');
  });

  it('a configured id the account does not have (another account, deleted) is replaced by the one found or created', () => {
    const config = { ...shippedConfig, kvNamespaceId: 'gone' };
    expect(planDeploy(options, observed({ config, buckets: ['edge-registry'] })).map((s) => s.kind)).toEqual([
      'create-kv',
      'write-config',
      'deploy',
      'smoke-test',
    ]);
  });

  it('sets URL_SIGNING_SECRET with secret put on a deployed Worker that lacks it, and never replaces one', () => {
    const ready = { kvNamespaces: [{ id: 'kv1', title: 'edge-registry' }], buckets: ['edge-registry'] };
    const lacking = planDeploy(options, observed({ ...ready, secrets: { workerExists: true, names: ['OTHER'] } }));
    expect(lacking.find((s) => s.kind === 'put-secret')).toMatchObject({
      command: ['secret', 'put', 'URL_SIGNING_SECRET', '--config', 'wrangler.toml', '--env', 'production'],
    });
    const having = planDeploy(options, observed({ ...ready, secrets: { workerExists: true, names: ['URL_SIGNING_SECRET'] } }));
    expect(having.some((s) => s.kind === 'put-secret')).toBe(false);
    expect(having.find((s) => s.kind === 'deploy')).toMatchObject({ withNewSigningSecret: false });
  });

  it('uses --bucket and --url when given', () => {
    const steps = planDeploy(
      { ...options, bucketName: 'acme-providers', smokeUrl: 'https://edge-registry.acme.workers.dev/' },
      observed({ buckets: ['edge-registry'] }),
    );
    expect(steps.find((s) => s.kind === 'create-bucket')).toMatchObject({ name: 'acme-providers' });
    expect(steps.at(-1)).toMatchObject({ url: 'https://edge-registry.acme.workers.dev/.well-known/terraform.json' });
  });

  it('needs a hostname: --hostname, or one already configured (not the shipped placeholder); refuses a malformed one', () => {
    expect(() => planDeploy({ ...options, hostname: null }, observed())).toThrow(PlanError);
    expect(() => planDeploy({ ...options, hostname: null }, observed())).toThrow(/no hostname/);
    for (const bad of ['https://registry.acme.com', 'registry.acme.com/x', 'localhost', 'registry.acme.com:443', 'reg istry.acme.com']) {
      expect(() => planDeploy({ ...options, hostname: bad }, observed()), bad).toThrow(/is not a hostname/);
    }
    const steps = planDeploy({ ...options, hostname: null }, observed({ config: { ...shippedConfig, hostname: 'r.acme.dev' } }));
    expect(steps.at(-1)).toMatchObject({ url: 'https://r.acme.dev/.well-known/terraform.json' });
  });

  it('refuses to go on logged out (pointing at wrangler login and the token permissions) or with an ambiguous account', () => {
    const loggedOut = () => checkAuth({ auth: { loggedIn: false }, accountIdFromEnv: null });
    expect(loggedOut).toThrow(PlanError);
    try {
      loggedOut();
    } catch (error) {
      expect((error as PlanError).fix).toContain('npx wrangler login');
      expect((error as PlanError).fix).toContain('CLOUDFLARE_API_TOKEN');
      expect((error as PlanError).fix).toContain('Workers KV Storage · Edit');
      expect((error as PlanError).fix).toContain('Workers R2 Storage · Edit');
    }
    const two = {
      ...account,
      accounts: [
        { id: 'a1', name: 'Acme' },
        { id: 'a2', name: 'Other' },
      ],
    };
    expect(() => checkAuth({ auth: two, accountIdFromEnv: null })).toThrow(/2 accounts/);
    expect(checkAuth({ auth: two, accountIdFromEnv: 'a2' })).toEqual({ id: 'a2', name: 'Other' });
    expect(() => checkAuth({ auth: two, accountIdFromEnv: 'a3' })).toThrow(/not one of/);
  });
});

describe('editing the production environment of wrangler.toml', () => {
  const wanted = { kvNamespaceId: 'abc123', bucketName: 'acme-bucket', hostname: 'registry.acme.com' };

  it('changes only [env.production]: comments and the local configuration stay as written', () => {
    const { text } = editProductionConfig(shippedToml, 'production', wanted);
    const [before, after] = [shippedToml, text].map((t) => t.slice(0, t.indexOf('[env.production]')));
    expect(after).toBe(before);
    for (const comment of shippedToml.split('\n').filter((l) => l.trim().startsWith('#'))) expect(text).toContain(comment);
    expect(text).toContain('[env.production]\nname = "edge-registry"\nroutes = [{ pattern = "registry.acme.com", custom_domain = true }]\n');
  });

  it('is idempotent: a second edit changes nothing', () => {
    const once = editProductionConfig(shippedToml, 'production', wanted);
    const twice = editProductionConfig(once.text, 'production', wanted);
    expect(twice.changes).toEqual([]);
    expect(twice.text).toBe(once.text);
  });

  it('replaces a multi-line routes array and adds sections that are missing', () => {
    const custom = 'name = "x"\nmain = "src/index.ts"\n\n[env.production]\nname = "x"\nroutes = [\n  "old.example.com/*",\n]\n';
    const { text, changes } = editProductionConfig(custom, 'production', wanted);
    expect(text).not.toContain('old.example.com');
    expect(text).toContain('[[env.production.kv_namespaces]]\nbinding = "REGISTRY_KV"\nid = "abc123"');
    expect(text).toContain('[[env.production.r2_buckets]]\nbinding = "REGISTRY_R2"\nbucket_name = "acme-bucket"');
    expect(changes.find((c) => c.key === 'routes')?.from).toBe('[ "old.example.com/*", ]');
  });
});

describe('the deploy plan: R2 lifecycle rules', () => {
  it("adds each rule the bucket lacks, with wrangler 4.86's `r2 bucket lifecycle add` arguments; none twice, and not over an operator's own rule on the prefix", () => {
    const ready = {
      kvNamespaces: [{ id: 'kv123', title: 'edge-registry' }],
      buckets: ['edge-registry'],
      secrets: { workerExists: true as const, names: ['URL_SIGNING_SECRET'] },
    };
    const lacking = planDeploy(options, observed({ ...ready, lifecycleRules: [{ name: 'Default Multipart Abort Rule', prefix: '' }] }));
    expect(lacking.filter((s) => s.kind === 'add-lifecycle-rule').map((s) => ('command' in s ? s.command.join(' ') : ''))).toEqual([
      'r2 bucket lifecycle add edge-registry edge-registry-uploads .uploads/ --expire-days 2 --abort-multipart-days 2',
      'r2 bucket lifecycle add edge-registry edge-registry-ci-token-uses .ci-token-uses/ --expire-days 1',
      'r2 bucket lifecycle add edge-registry edge-registry-login-codes .login-codes/ --expire-days 1',
      'r2 bucket lifecycle add edge-registry edge-registry-ended-sessions .ended-sessions/ --expire-days 1',
    ]);
    expect(lacking[0]!.describe).toBe(
      'add the R2 lifecycle rule "edge-registry-uploads" to "edge-registry": delete objects under .uploads/ after 2 days (publish API uploads: sessions expire after 24 h)',
    );
    const some = planDeploy(
      options,
      observed({
        ...ready,
        lifecycleRules: [
          { name: 'edge-registry-uploads', prefix: '.uploads/' },
          { name: 'keep-codes-a-week', prefix: '.login-codes/' },
        ],
      }),
    );
    expect(some.filter((s) => s.kind === 'add-lifecycle-rule').map((s) => (s.kind === 'add-lifecycle-rule' ? s.name : ''))).toEqual([
      'edge-registry-ci-token-uses',
      'edge-registry-ended-sessions',
    ]);
    expect(planDeploy(options, observed(ready)).map((s) => s.kind)).toEqual(['write-config', 'deploy', 'smoke-test']);
    // --bucket names the bucket the rules go on.
    const other = planDeploy({ ...options, bucketName: 'reg-files' }, observed({ ...ready, buckets: ['reg-files'], lifecycleRules: [] }));
    expect(other.find((s) => s.kind === 'add-lifecycle-rule')).toMatchObject({ command: expect.arrayContaining(['reg-files']) });
  });
});

describe('the deploy plan with --release-files r2 (issue 38)', () => {
  const deployed = (names: string[]) =>
    observed({
      kvNamespaces: [{ id: 'kv123', title: 'edge-registry' }],
      buckets: ['edge-registry'],
      secrets: { workerExists: true, names },
    });

  it('puts the R2 API token’s keys from the environment when the Worker lacks them, and deploys with the R2 variables', () => {
    const steps = planDeploy({ ...options, releaseFilesR2: true }, deployed(['URL_SIGNING_SECRET']));
    const secrets = steps.filter((s) => s.kind === 'put-secret');
    expect(secrets.map((s) => (s.kind === 'put-secret' ? s.fromEnv : null))).toEqual(['R2_ACCESS_KEY_ID', 'R2_SECRET_ACCESS_KEY']);
    const deploy = steps.find((s) => s.kind === 'deploy')!;
    expect(deploy.kind === 'deploy' && deploy.command).toEqual(
      expect.arrayContaining(['--var', 'RELEASE_FILES:r2', 'R2_ENDPOINT:https://a1.r2.cloudflarestorage.com', 'R2_BUCKET_NAME:edge-registry']),
    );
  });

  it('puts no secret the Worker already has (a re-run only deploys)', () => {
    const steps = planDeploy({ ...options, releaseFilesR2: true }, deployed(['URL_SIGNING_SECRET', 'R2_ACCESS_KEY_ID', 'R2_SECRET_ACCESS_KEY']));
    expect(steps.filter((s) => s.kind === 'put-secret')).toEqual([]);
  });

  it('a first deploy carries the R2 keys in its secrets file', () => {
    const steps = planDeploy({ ...options, releaseFilesR2: true }, observed());
    expect(steps.find((s) => s.kind === 'deploy')).toMatchObject({ withNewSigningSecret: true, secretsFromEnv: ['R2_ACCESS_KEY_ID', 'R2_SECRET_ACCESS_KEY'] });
  });

  it('without the flag nothing about R2 is set (the Worker serves release files)', () => {
    const deploy = planDeploy(options, deployed(['URL_SIGNING_SECRET'])).find((s) => s.kind === 'deploy')!;
    expect(deploy.kind === 'deploy' && deploy.command.join(' ')).not.toContain('RELEASE_FILES');
  });
});

describe('the deploy plan with --public-documents (issue 38: provider metadata from R2)', () => {
  const ready = () =>
    observed({
      kvNamespaces: [{ id: 'kv123', title: 'edge-registry' }],
      buckets: ['edge-registry'],
      secrets: { workerExists: true, names: ['URL_SIGNING_SECRET'] },
    });

  it('writes PUBLIC_DOCUMENTS = "r2" and FILES_ORIGIN into the environment’s vars (where the scripts read them too), then deploys', () => {
    const steps = planDeploy({ ...options, filesOrigin: 'https://files.acme.com' }, ready());
    const write = steps.find((s) => s.kind === 'write-config');
    expect(write?.kind === 'write-config' && write.text).toContain('PUBLIC_DOCUMENTS = "r2"\nFILES_ORIGIN = "https://files.acme.com"');
    expect(write?.kind === 'write-config' && write.changes.map((c) => c.key)).toEqual(expect.arrayContaining(['PUBLIC_DOCUMENTS', 'FILES_ORIGIN']));
    expect(steps.find((s) => s.kind === 'deploy')?.describe).toContain('provider metadata and files from https://files.acme.com');
  });

  it('a config that already holds them is not rewritten for them; without the flag they are left as they are', () => {
    const base = ready();
    const first = planDeploy({ ...options, filesOrigin: 'https://files.acme.com' }, base).find((s) => s.kind === 'write-config');
    const text = first?.kind === 'write-config' ? first.text : '';
    const again = planDeploy(
      { ...options, filesOrigin: 'https://files.acme.com' },
      {
        ...base,
        configText: text,
        config: {
          ...base.config,
          kvNamespaceId: 'kv123',
          bucketName: 'edge-registry',
          hostname: 'registry.acme.com',
          routes: [{ pattern: 'registry.acme.com', custom_domain: true }],
          filesOrigin: 'https://files.acme.com',
        },
      },
    );
    expect(again.map((s) => s.kind)).toEqual(['deploy', 'smoke-test']);
    const without = planDeploy(options, ready()).find((s) => s.kind === 'write-config');
    expect(without?.kind === 'write-config' && without.text).not.toContain('PUBLIC_DOCUMENTS');
  });
});
