/**
 * `npm run deploy -- --hostname registry.acme.com [--dry-run]`
 *
 * From `wrangler login` to a working registry on your domain: checks the
 * login, creates the KV namespace and R2 bucket when the account lacks them
 * (found by name otherwise), writes their ids, the hostname and its custom
 * domain route into wrangler.toml's [env.production], sets
 * URL_SIGNING_SECRET when the Worker has none, deploys, checks service
 * discovery on the deployed URL and prints the next steps. Refuses, before
 * anything changes, a URL_SIGNING_SECRET or SIGNING_KEY_SECRET in the
 * environment shorter than 32 characters (src/config.ts). Safe to re-run:
 * every decision is made from what the account holds now.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import { run, say, UsageError } from './lib/cli';
import { DeployStepError, executeDeploy } from './lib/deploy/execute';
import { nextSteps } from './lib/deploy/next-steps';
import { chooseHostname, PlanError, R2_SECRETS } from './lib/deploy/plan';
import { PLACEHOLDER_HOSTNAME, readProductionConfig } from './lib/deploy/production-config';
import { InputError } from '../src/protocol/errors';
import { describeProblem, mergeVars, preflightProblems } from './lib/dev/preflight';
import { readWranglerVars } from './lib/config';

const USAGE = `usage: npm run deploy -- --hostname registry.acme.com [options]

  --hostname HOST     the hostname the registry answers on (a zone in your Cloudflare account);
                      remembered in wrangler.toml, so later runs may leave it out; asked for
                      at a terminal when neither names one
  --dry-run           print every wrangler command and file change, change nothing
  --env NAME          wrangler environment (default production)
  --config PATH       wrangler.toml (default ./wrangler.toml)
  --kv-namespace T    title of the KV namespace to use or create (default edge-registry)
  --bucket NAME       R2 bucket to use or create (default: wrangler.toml's, edge-registry)
  --url URL           check service discovery at URL instead of https://HOST (e.g. the workers.dev URL)
  --release-files r2  release files straight from R2 (presigned URLs; docs/serving.md): needs R2_ACCESS_KEY_ID
                      and R2_SECRET_ACCESS_KEY (an R2 API token, Object Read only) in the environment
  --public-documents URL
                      public mode: provider metadata and files from the bucket's public custom domain URL
                      (PUBLIC_DOCUMENTS=r2, written into wrangler.toml; docs/serving.md says the manual steps)
  --verbose           stack traces on failure

Needs \`npx wrangler login\` first, or CLOUDFLARE_API_TOKEN (+ CLOUDFLARE_ACCOUNT_ID) in the environment.`;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      hostname: { type: 'string' },
      'dry-run': { type: 'boolean' },
      env: { type: 'string' },
      config: { type: 'string' },
      'kv-namespace': { type: 'string' },
      bucket: { type: 'string' },
      url: { type: 'string' },
      'release-files': { type: 'string' },
      'public-documents': { type: 'string' },
      'smoke-timeout': { type: 'string' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const configPath = values.config ?? 'wrangler.toml';
  const env = values.env ?? 'production';
  const hostname = values.hostname ?? (await askHostname(configPath, env));
  const options = {
    env,
    configPath,
    configFile: resolve(configPath),
    hostname,
    kvTitle: values['kv-namespace'] ?? 'edge-registry',
    bucketName: values.bucket ?? null,
    smokeUrl: values.url ?? null,
    dryRun: values['dry-run'] ?? false,
    smokeTimeoutMs: Number(values['smoke-timeout'] ?? 180) * 1000,
    releaseFilesR2: releaseFilesR2(values['release-files']),
    filesOrigin: values['public-documents'] ?? null,
    say,
  };
  // The Worker's own parser (src/config.ts) on what it will run with — [env.ENV.vars], --hostname, and the secrets
  // the operator holds in the environment (SIGNING_KEY_SECRET for keys --remote): refused here, before anything
  // changes, naming each setting, where it is set and the fix, as the Worker would answer 503 for it.
  const problems = await deployProblems(options.configFile, env, hostname, options.filesOrigin);
  if (problems.length > 0) throw new InputError(`deploy stopped before changing anything: ${problems.join('\n  ')}`);
  try {
    await executeDeploy(options);
    if (options.dryRun) return;
    const hostname = chooseHostname(options, await readProductionConfig(options.configFile, env));
    process.stdout.write(nextSteps(hostname, env, configPath, options.filesOrigin));
  } catch (error) {
    throw asInputError(error, values.verbose ?? false);
  }
}

/** deploy's pre-flight: the problems (described, with where each setting is set) of the variables the Worker will get. */
async function deployProblems(configFile: string, env: string, hostname: string | null, filesOrigin: string | null): Promise<string[]> {
  const secrets: Record<string, string> = {};
  for (const name of ['URL_SIGNING_SECRET', 'SIGNING_KEY_SECRET', 'OIDC_CLIENT_SECRET']) {
    const value = process.env[name];
    if (value) secrets[name] = value;
  }
  const { vars, sources } = mergeVars([
    ['wrangler.toml', existsSync(configFile) ? await readWranglerVars(configFile, env) : {}],
    ['--hostname', hostname ? { REGISTRY_HOSTNAME: hostname } : {}],
    ['--public-documents', filesOrigin !== null ? { PUBLIC_DOCUMENTS: 'r2', FILES_ORIGIN: filesOrigin } : {}],
    ['the environment', secrets],
  ]);
  return preflightProblems(vars).map((problem) => describeProblem(problem, sources));
}

/**
 * --release-files: "r2" → true after checking the environment holds the R2
 * API token's S3 keys (the one step wrangler cannot do); "worker" or absent →
 * false. Throws InputError before anything changes otherwise.
 */
function releaseFilesR2(value: string | undefined): boolean {
  if (value === undefined || value === 'worker') return false;
  if (value !== 'r2') throw new InputError(`--release-files is "${value}"; it is "r2" (release files straight from R2) or "worker" (the default)`);
  const missing = R2_SECRETS.filter((name) => !process.env[name]);
  if (missing.length > 0) {
    throw new InputError(
      `deploy stopped before changing anything: --release-files r2 needs ${missing.join(' and ')} in the environment. ` +
        'wrangler cannot create R2 API tokens: dash.cloudflare.com → R2 → Manage R2 API Tokens → Create API token, permission ' +
        '"Object Read only" on the registry\'s bucket; export its Access Key ID as R2_ACCESS_KEY_ID and its Secret Access Key as ' +
        'R2_SECRET_ACCESS_KEY, then run the deploy again (docs/serving.md, "Release files straight from R2")',
    );
  }
  return true;
}

/**
 * The hostname asked for at a terminal when neither --hostname nor wrangler.toml names one; null when
 * not at a terminal, when wrangler.toml names one, or when the answer is empty (the plan then says what to do).
 */
async function askHostname(configPath: string, env: string): Promise<string | null> {
  if (!process.stdin.isTTY) return null;
  const configured = (await readProductionConfig(resolve(configPath), env)).hostname;
  if (configured && configured !== PLACEHOLDER_HOSTNAME) return null;
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  const answer = (await prompt.question('Hostname for the registry (a zone in your Cloudflare account, e.g. registry.acme.com): ')).trim() || null;
  prompt.close();
  return answer;
}

/** A plan or step failure as the operator's error (exit 1) naming the step and the fix; anything else unchanged. */
function asInputError(error: unknown, verbose: boolean): unknown {
  if (error instanceof PlanError) return new InputError(`deploy stopped at "${error.step}": ${error.message}\nfix: ${error.fix}`);
  if (error instanceof DeployStepError) {
    const output = error.output ? `\n--- wrangler printed ---\n${error.output}\n---` : '';
    if (verbose) say(error.stack ?? '');
    return new InputError(`deploy failed at "${error.step}": ${error.message}${output}\nfix: ${error.fix}`);
  }
  return error;
}

run(() => main(process.argv.slice(2)), USAGE);
