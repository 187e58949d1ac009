/**
 * The deploy as a plan: a pure function from what was observed (wrangler's
 * answers and the config file) to the list of steps still to do. The
 * executor (execute.ts) observes, plans, runs the first step that changes
 * something, and observes again, so every decision is made from the
 * account's current state: re-running after a failure continues where it
 * stopped, and running it on a finished deployment only deploys again.
 */
import type { Account, Auth, KvNamespace, LifecycleRule, Secrets } from './wrangler-output';
import { LIFECYCLE_RULES } from './lifecycle-rules';
import { PLACEHOLDER_HOSTNAME, PLACEHOLDER_KV_ID, configMatches, editProductionConfig, type ConfigChange, type ProductionConfig } from './production-config';

export interface DeployOptions {
  /** wrangler environment to deploy (default production). */
  env: string;
  /** Path of wrangler.toml as given (for display and --config). */
  configPath: string;
  /** --hostname, or null to keep the one in the config. */
  hostname: string | null;
  /** Title of the KV namespace to find or create. */
  kvTitle: string;
  /** R2 bucket to find or create; null = the config's bucket_name (or edge-registry). */
  bucketName: string | null;
  /** URL the smoke test fetches discovery from; null = https://HOSTNAME. */
  smokeUrl: string | null;
  /**
   * --release-files r2: release files straight from R2 (docs/serving.md). The deploy then sets RELEASE_FILES,
   * R2_ENDPOINT and R2_BUCKET_NAME (wrangler deploy --var) and the secrets R2_ACCESS_KEY_ID and
   * R2_SECRET_ACCESS_KEY from the environment; absent or false: the Worker serves them (the default).
   */
  releaseFilesR2?: boolean;
  /**
   * --public-documents FILES_ORIGIN (public mode): provider metadata and files from the bucket's public custom
   * domain (docs/serving.md). The deploy writes PUBLIC_DOCUMENTS = "r2" and FILES_ORIGIN into the environment's
   * vars in wrangler.toml; attaching the domain to the bucket and its WAF rule stay manual (next steps say how).
   */
  filesOrigin?: string | null;
}

/** The Worker secrets RELEASE_FILES=r2 needs, taken from the deploy's environment (an R2 API token's S3 keys). */
export const R2_SECRETS = ['R2_ACCESS_KEY_ID', 'R2_SECRET_ACCESS_KEY'] as const;

/** Everything the plan is computed from. `auth` null: not asked (dry run while logged out). */
export interface Observed {
  auth: Auth;
  /** CLOUDFLARE_ACCOUNT_ID from the environment, if set. */
  accountIdFromEnv: string | null;
  /** null when it could not be listed (dry run while logged out): assume none. */
  kvNamespaces: KvNamespace[] | null;
  buckets: string[] | null;
  /** The bucket's lifecycle rules; null when not known (the bucket does not exist yet, or a dry run while logged out). */
  lifecycleRules: LifecycleRule[] | null;
  secrets: Secrets | null;
  config: ProductionConfig;
  configText: string;
}

export const SIGNING_SECRET = 'URL_SIGNING_SECRET';

/** A placeholder for a value the plan cannot know yet (the id of a namespace not created yet). */
export const PENDING_KV_ID = '<id of the new KV namespace>';

export type Step =
  | { kind: 'create-kv'; title: string; describe: string; command: string[] }
  | { kind: 'create-bucket'; name: string; describe: string; command: string[] }
  | { kind: 'add-lifecycle-rule'; name: string; describe: string; command: string[] }
  | { kind: 'write-config'; describe: string; text: string; changes: ConfigChange[] }
  /** `fromEnv`: the value is that environment variable's (else a random 32-byte one). */
  | { kind: 'put-secret'; describe: string; command: string[]; fromEnv?: string }
  /** `withNewSigningSecret`: a first deploy, with a new URL_SIGNING_SECRET (and `secretsFromEnv`) in its secrets file. */
  | { kind: 'deploy'; describe: string; command: string[]; withNewSigningSecret: boolean; secretsFromEnv?: string[] }
  | { kind: 'smoke-test'; describe: string; url: string };

/** A problem the user must fix before anything is planned: what is wrong and what to do. */
export class PlanError extends Error {
  constructor(
    readonly step: string,
    message: string,
    readonly fix: string,
  ) {
    super(message);
  }
}

/** The exact permissions an API token needs for `npm run deploy` (and nothing more). */
export const TOKEN_PERMISSIONS = [
  'Account · Workers Scripts · Edit',
  'Account · Workers KV Storage · Edit',
  'Account · Workers R2 Storage · Edit',
  'Account · Account Settings · Read',
  'User · User Details · Read',
  'Zone · Workers Routes · Edit (the zone of your hostname)',
  'Zone · DNS · Edit (the zone of your hostname: the custom domain adds its DNS record)',
  'Zone · Zone · Read (the zone of your hostname)',
];

export const LOGIN_FIX = [
  'run `npx wrangler login` (opens a browser), then `npm run deploy` again;',
  'or, in CI, set CLOUDFLARE_API_TOKEN (and CLOUDFLARE_ACCOUNT_ID) to an API token with these permissions',
  '(dash.cloudflare.com → My Profile → API Tokens → Create Token → Custom token):',
  ...TOKEN_PERMISSIONS.map((p) => `  - ${p}`),
].join('\n');

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** --hostname's value, lower case; throws PlanError for anything that is not a DNS name with a dot. */
export function parseDeployHostname(raw: string): string {
  const hostname = raw.trim().toLowerCase().replace(/\.$/, '');
  if (!HOSTNAME.test(hostname)) {
    throw new PlanError(
      'hostname',
      `"${raw}" is not a hostname`,
      'pass the DNS name users will type, e.g. --hostname registry.acme.com (no scheme, no path, no port)',
    );
  }
  return hostname;
}

/** The hostname to deploy on: --hostname, else the config's unless it is the shipped placeholder. Throws PlanError when neither. */
export function chooseHostname(options: DeployOptions, config: ProductionConfig): string {
  if (options.hostname) return parseDeployHostname(options.hostname);
  if (config.hostname && config.hostname !== PLACEHOLDER_HOSTNAME) return parseDeployHostname(config.hostname);
  throw new PlanError(
    'hostname',
    'no hostname to deploy on',
    'pass the hostname the registry will answer on, in a zone of your Cloudflare account: npm run deploy -- --hostname registry.acme.com',
  );
}

/** Checks the account choice; throws PlanError when logged out or when several accounts leave the choice open. */
export function checkAuth(observed: Pick<Observed, 'auth' | 'accountIdFromEnv'>): Account | null {
  const { auth } = observed;
  if (!auth.loggedIn) throw new PlanError('check wrangler login', 'wrangler is not authenticated', LOGIN_FIX);
  if (observed.accountIdFromEnv) {
    const account = auth.accounts.find((a) => a.id === observed.accountIdFromEnv);
    if (!account) {
      throw new PlanError(
        'check wrangler login',
        `CLOUDFLARE_ACCOUNT_ID=${observed.accountIdFromEnv} is not one of this login's accounts`,
        `use one of: ${auth.accounts.map((a) => `${a.id} (${a.name})`).join(', ')}`,
      );
    }
    return account;
  }
  if (auth.accounts.length === 1) return auth.accounts[0]!;
  if (auth.accounts.length === 0) throw new PlanError('check wrangler login', 'this login has no Cloudflare account', LOGIN_FIX);
  throw new PlanError(
    'check wrangler login',
    `this login has ${auth.accounts.length} accounts`,
    `choose one: CLOUDFLARE_ACCOUNT_ID=<id> npm run deploy …, with one of ${auth.accounts.map((a) => `${a.id} (${a.name})`).join(', ')}`,
  );
}

const wranglerConfigArgs = (options: DeployOptions) => ['--config', options.configPath, '--env', options.env];

/**
 * The steps still to do, in order. Decisions:
 * - KV: the config's id if the account has it, else a namespace titled
 *   `kvTitle` if one exists, else create it.
 * - R2: the bucket named by --bucket or the config; create it if the account lacks it;
 *   add each of LIFECYCLE_RULES it lacks (by name or by prefix).
 * - Config: write id, bucket, hostname and route when they differ.
 * - Secret: a deployed Worker without URL_SIGNING_SECRET gets one with
 *   `wrangler secret put`; a Worker never deployed gets it with its first
 *   deploy (`--secrets-file`), so it never runs without one.
 * - --release-files r2: R2_ACCESS_KEY_ID and R2_SECRET_ACCESS_KEY put from
 *   the environment when the deployed Worker lacks them (in the first
 *   deploy's secrets file when there is none yet), and the deploy given
 *   RELEASE_FILES, R2_ENDPOINT (from the account id) and R2_BUCKET_NAME.
 * - Always: deploy, then the smoke test.
 * Throws PlanError for a missing hostname.
 */
export function planDeploy(options: DeployOptions, observed: Observed): Step[] {
  const steps: Step[] = [];
  const hostname = chooseHostname(options, observed.config);
  const { config } = observed;
  const namespaces = observed.kvNamespaces ?? [];

  let kvId: string;
  const configured = config.kvNamespaceId && config.kvNamespaceId !== PLACEHOLDER_KV_ID ? namespaces.find((n) => n.id === config.kvNamespaceId) : undefined;
  const byTitle = namespaces.find((n) => n.title === options.kvTitle);
  if (configured) kvId = configured.id;
  else if (byTitle) kvId = byTitle.id;
  else {
    kvId = PENDING_KV_ID;
    steps.push({
      kind: 'create-kv',
      title: options.kvTitle,
      describe: `create the KV namespace "${options.kvTitle}" (the account has none with that title)`,
      command: ['kv', 'namespace', 'create', options.kvTitle],
    });
  }

  const bucketName = options.bucketName ?? config.bucketName ?? 'edge-registry';
  if (!(observed.buckets ?? []).includes(bucketName)) {
    steps.push({
      kind: 'create-bucket',
      name: bucketName,
      describe: `create the R2 bucket "${bucketName}" (the account has none with that name)`,
      command: ['r2', 'bucket', 'create', bucketName],
    });
  }

  // Lifecycle rules: each one the bucket lacks (by our name, or any rule of the operator's on the same prefix).
  // A bucket still to be created has none; a dry run that could not look lists them all.
  const rules = observed.lifecycleRules ?? [];
  for (const rule of LIFECYCLE_RULES) {
    if (rules.some((r) => r.name === rule.name || r.prefix === rule.prefix)) continue;
    steps.push({
      kind: 'add-lifecycle-rule',
      name: rule.name,
      describe: `add the R2 lifecycle rule "${rule.name}" to "${bucketName}": delete objects under ${rule.prefix} after ${rule.expireDays} day${rule.expireDays === 1 ? '' : 's'} (${rule.what})`,
      command: [
        'r2',
        'bucket',
        'lifecycle',
        'add',
        bucketName,
        rule.name,
        rule.prefix,
        '--expire-days',
        String(rule.expireDays),
        ...('abortMultipartDays' in rule ? ['--abort-multipart-days', String(rule.abortMultipartDays)] : []),
      ],
    });
  }

  const wanted = { kvNamespaceId: kvId, bucketName, hostname, ...(options.filesOrigin ? { filesOrigin: options.filesOrigin } : {}) };
  if (!configMatches(config, wanted)) {
    const { text, changes } = editProductionConfig(observed.configText, options.env, wanted);
    steps.push({ kind: 'write-config', describe: `write the ${options.env} environment into ${options.configPath}`, text, changes });
  }

  const secrets = observed.secrets ?? { workerExists: false };
  let withNewSigningSecret = false;
  if (!secrets.workerExists) withNewSigningSecret = true;
  else if (!secrets.names.includes(SIGNING_SECRET)) {
    steps.push({
      kind: 'put-secret',
      describe: `set ${SIGNING_SECRET} on the Worker "${config.workerName}" (a random 32-byte value; the Worker has none)`,
      command: ['secret', 'put', SIGNING_SECRET, ...wranglerConfigArgs(options)],
    });
  }

  const r2Vars: string[] = [];
  if (options.releaseFilesR2) {
    // Secrets before the deploy that uses them; a Worker never deployed gets them in its first deploy's secrets file.
    if (secrets.workerExists) {
      for (const name of R2_SECRETS.filter((n) => !secrets.names.includes(n))) {
        steps.push({
          kind: 'put-secret',
          describe: `set ${name} on the Worker "${config.workerName}" (from the environment)`,
          command: ['secret', 'put', name, ...wranglerConfigArgs(options)],
          fromEnv: name,
        });
      }
    }
    const account = observed.auth.loggedIn ? checkAuth(observed)?.id : undefined;
    r2Vars.push(
      '--var',
      'RELEASE_FILES:r2',
      '--var',
      `R2_ENDPOINT:https://${account ?? '<ACCOUNT_ID>'}.r2.cloudflarestorage.com`,
      '--var',
      `R2_BUCKET_NAME:${bucketName}`,
    );
  }

  steps.push({
    kind: 'deploy',
    describe:
      (withNewSigningSecret
        ? `deploy the Worker "${config.workerName}" (first deploy: with a new random ${SIGNING_SECRET})`
        : `deploy the Worker "${config.workerName}"`) +
      (options.releaseFilesR2 ? ', release files straight from R2 (presigned URLs)' : '') +
      (options.filesOrigin ? `, provider metadata and files from ${options.filesOrigin} (PUBLIC_DOCUMENTS=r2)` : ''),
    command: [
      'deploy',
      ...wranglerConfigArgs(options),
      ...r2Vars,
      ...(withNewSigningSecret ? ['--secrets-file', '<temporary file with URL_SIGNING_SECRET>'] : []),
    ],
    withNewSigningSecret,
    ...(withNewSigningSecret && options.releaseFilesR2 ? { secretsFromEnv: [...R2_SECRETS] } : {}),
  });
  const url = `${(options.smokeUrl ?? `https://${hostname}`).replace(/\/+$/, '')}/.well-known/terraform.json`;
  steps.push({ kind: 'smoke-test', describe: `check service discovery at ${url}`, url });
  return steps;
}

/** True for the steps that change the account or the config (the ones the executor re-observes after). */
export function isSetupStep(step: Step): boolean {
  return (
    step.kind === 'create-kv' ||
    step.kind === 'create-bucket' ||
    step.kind === 'add-lifecycle-rule' ||
    step.kind === 'write-config' ||
    step.kind === 'put-secret'
  );
}
