/**
 * Runs the deploy plan with the real `wrangler` (the first on PATH; the
 * project's node_modules/.bin as a fallback, which `npm run` puts first
 * anyway). Observe → plan → run the first setup step → observe again, until
 * only the deploy and the smoke test are left; then those. `dryRun` observes
 * (read-only wrangler commands) and prints the whole plan, changing nothing.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { isSetupStep, planDeploy, checkAuth, PlanError, LOGIN_FIX, SIGNING_SECRET, type DeployOptions, type Observed, type Step } from './plan';
import { readProductionConfig } from './production-config';
import { parseServiceDiscovery } from '../../../src/protocol/discovery';
import {
  parseKvNamespaces,
  parseLifecycleRules,
  parseR2Buckets,
  parseSecrets,
  parseWhoami,
  plain,
  WranglerOutputError,
  type WranglerResult,
} from './wrangler-output';

const root = join(import.meta.dirname, '..', '..', '..');

/** A step that failed: which, what wrangler printed, and what to do. */
export class DeployStepError extends Error {
  constructor(
    readonly step: string,
    message: string,
    readonly output: string,
    readonly fix: string,
  ) {
    super(message);
  }
}

export interface ExecuteOptions extends DeployOptions {
  /** Absolute path of wrangler.toml (what is read and written). */
  configFile: string;
  dryRun: boolean;
  /** How long the smoke test keeps trying (a new custom domain needs DNS and a certificate). */
  smokeTimeoutMs: number;
  /** Progress lines (stderr). */
  say: (line: string) => void;
}

/** Runs wrangler with `args`; never throws for a non-zero exit (the caller decides). */
export function wrangler(args: string[], options: { stdin?: string; cwd?: string } = {}): Promise<WranglerResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('wrangler', args, {
      cwd: options.cwd ?? process.cwd(),
      env: { ...process.env, PATH: `${process.env.PATH ?? ''}${delimiter}${join(root, 'node_modules', '.bin')}`, WRANGLER_HIDE_BANNER: 'true' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', (error) =>
      reject(new DeployStepError('run wrangler', `could not start wrangler: ${error.message}`, '', 'run `npm install` in the project first')),
    );
    child.on('close', (status) => resolve({ status: status ?? 1, stdout, stderr }));
    // A wrangler that exits without reading its input (EPIPE) is judged by its exit status, not by this write.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
  });
}

const shown = (args: string[]) => `wrangler ${args.map((a) => (/^[\w@%+=:,./<>-]+$/.test(a) ? a : `'${a}'`)).join(' ')}`;

function outputOf(result: WranglerResult): string {
  return plain(`${result.stdout}\n${result.stderr}`).trim();
}

/** Observes the account and the config. Logged out: throws PlanError, unless dryRun (then assumes an empty account). */
export async function observe(options: ExecuteOptions, auth?: Observed['auth']): Promise<Observed> {
  const config = await readProductionConfig(options.configFile, options.env);
  const configText = await readFile(options.configFile, 'utf8');
  const accountIdFromEnv = process.env.CLOUDFLARE_ACCOUNT_ID || null;
  if (!auth) {
    const result = await wrangler(['whoami', '--json']);
    try {
      auth = parseWhoami(result);
    } catch (error) {
      throw new DeployStepError('check wrangler login', (error as Error).message, outputOf(result), LOGIN_FIX);
    }
  }
  if (!auth.loggedIn) {
    if (options.dryRun) {
      options.say('note: wrangler is not logged in, so this dry run assumes the account has nothing yet');
      return { auth, accountIdFromEnv, kvNamespaces: null, buckets: null, lifecycleRules: null, secrets: null, config, configText };
    }
    checkAuth({ auth, accountIdFromEnv }); // throws with the login fix
  }
  checkAuth({ auth, accountIdFromEnv });
  const read = async <T>(step: string, args: string[], parse: (r: WranglerResult) => T, fix: string): Promise<T> => {
    const result = await wrangler(args);
    try {
      if (result.status !== 0 && args[0] !== 'secret') throw new WranglerOutputError(`\`${shown(args)}\` failed (exit status ${result.status})`);
      return parse(result);
    } catch (error) {
      throw new DeployStepError(step, (error as Error).message.split('\n')[0]!, outputOf(result), fix);
    }
  };
  const [kvNamespaces, buckets, secrets] = await Promise.all([
    read('list KV namespaces', ['kv', 'namespace', 'list'], parseKvNamespaces, 'the token needs "Workers KV Storage: Edit"; then run `npm run deploy` again'),
    read(
      'list R2 buckets',
      ['r2', 'bucket', 'list'],
      parseR2Buckets,
      'R2 must be enabled once per account (dash.cloudflare.com → R2, free plan), and the token needs "Workers R2 Storage: Edit"; then run `npm run deploy` again',
    ),
    read(
      "list the Worker's secrets",
      ['secret', 'list', '--config', options.configPath, '--env', options.env],
      parseSecrets,
      'the token needs "Workers Scripts: Edit"; then run `npm run deploy` again',
    ),
  ]);
  const bucketName = options.bucketName ?? config.bucketName ?? 'edge-registry';
  const lifecycleRules = buckets.includes(bucketName)
    ? await read(
        "list the bucket's lifecycle rules",
        ['r2', 'bucket', 'lifecycle', 'list', bucketName],
        parseLifecycleRules,
        'the token needs "Workers R2 Storage: Edit"; then run `npm run deploy` again',
      )
    : null;
  return { auth, accountIdFromEnv, kvNamespaces, buckets, lifecycleRules, secrets, config, configText };
}

/** Prints one step as the plan shows it: what it does, the command or the file change. */
export function describeStep(step: Step, index: number, configPath: string): string[] {
  const lines = [`${index}. ${step.describe}`];
  if ('command' in step) lines.push(`     $ ${shown(step.command)}${step.kind === 'put-secret' ? '   (value on stdin)' : ''}`);
  if (step.kind === 'write-config') {
    for (const change of step.changes) {
      lines.push(`     ${configPath} [${change.section}] ${change.key}: ${change.from === null ? '(added)' : change.from} → ${change.to}`);
    }
  }
  if (step.kind === 'smoke-test') lines.push(`     GET ${step.url} → 200 {"providers.v1": …}`);
  return lines;
}

const FIXES: Record<Step['kind'], string> = {
  'create-kv': 'the token needs "Workers KV Storage: Edit"; then run `npm run deploy` again (it continues from here)',
  'create-bucket':
    'enable R2 once for the account (dash.cloudflare.com → R2; the free plan is enough) and give the token "Workers R2 Storage: Edit"; then run `npm run deploy` again (it continues from here)',
  'add-lifecycle-rule':
    'the token needs "Workers R2 Storage: Edit"; then run `npm run deploy` again (it continues from here). The Worker expires these objects itself too: the rule only deletes leftovers',
  'write-config': 'make the file writable (or fix the error above), then run `npm run deploy` again',
  'put-secret': 'the token needs "Workers Scripts: Edit"; then run `npm run deploy` again',
  deploy:
    'read wrangler\'s message above. A custom domain needs the hostname\'s zone in this account and a token with "Workers Routes: Edit", "DNS: Edit" and "Zone: Read" on it; then run `npm run deploy` again',
  'smoke-test': 'a new custom domain can take a few minutes (DNS record and certificate). Try `curl URL` in a minute; `npm run deploy` again only re-deploys',
};

/** Runs one step; throws DeployStepError naming it, with wrangler's output and the fix. */
async function runStep(step: Step, options: ExecuteOptions): Promise<void> {
  const fail = (message: string, output: string) => {
    throw new DeployStepError(step.describe, message, output, FIXES[step.kind].replace('URL', 'url' in step ? step.url : ''));
  };
  switch (step.kind) {
    case 'create-kv':
    case 'create-bucket':
    case 'add-lifecycle-rule': {
      const result = await wrangler(step.command);
      if (result.status !== 0) fail(`\`${shown(step.command)}\` failed (exit status ${result.status})`, outputOf(result));
      return;
    }
    case 'put-secret': {
      const value = step.fromEnv ? process.env[step.fromEnv] : randomBytes(32).toString('base64');
      if (!value) fail(`${step.fromEnv} is not set in the environment`, '');
      const result = await wrangler(step.command, { stdin: value! });
      if (result.status !== 0) fail(`\`${shown(step.command)}\` failed (exit status ${result.status})`, outputOf(result));
      return;
    }
    case 'write-config': {
      try {
        await writeFile(options.configFile, step.text);
        const written = await readProductionConfig(options.configFile, options.env);
        options.say(`     wrote ${options.configPath}: ${written.kvNamespaceId} / ${written.bucketName} / ${written.hostname}`);
      } catch (error) {
        fail(`could not write ${options.configPath}: ${(error as Error).message}`, '');
      }
      return;
    }
    case 'deploy': {
      let dir: string | null = null;
      try {
        const command = [...step.command];
        if (step.withNewSigningSecret) {
          dir = await mkdtemp(join(tmpdir(), 'edge-registry-deploy-'));
          const file = join(dir, 'secrets.json');
          const fromEnv = Object.fromEntries((step.secretsFromEnv ?? []).map((name) => [name, process.env[name] ?? '']));
          await writeFile(file, JSON.stringify({ [SIGNING_SECRET]: randomBytes(32).toString('base64'), ...fromEnv }), { mode: 0o600 });
          command[command.indexOf('<temporary file with URL_SIGNING_SECRET>')] = file;
        }
        const result = await wrangler(command);
        if (result.status !== 0) fail(`\`${shown(step.command)}\` failed (exit status ${result.status})`, outputOf(result));
        const urls = outputOf(result)
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => /^https:\/\/\S+$/.test(l) || /\(custom domain\)$/.test(l));
        for (const url of urls) options.say(`     ${url}`);
      } finally {
        if (dir) await rm(dir, { recursive: true, force: true });
      }
      return;
    }
    case 'smoke-test': {
      const deadline = Date.now() + options.smokeTimeoutMs;
      let last = '';
      for (;;) {
        try {
          const response = await fetch(step.url, { signal: AbortSignal.timeout(10_000) });
          const body = await response.text();
          last = `HTTP ${response.status}: ${body.slice(0, 300)}`;
          if (response.status === 200 && parseServiceDiscovery(JSON.parse(body))['providers.v1']) return;
        } catch (error) {
          last = `${(error as Error).message}${(error as { cause?: Error }).cause ? `: ${(error as { cause: Error }).cause.message}` : ''}`;
        }
        if (Date.now() >= deadline) fail(`${step.url} did not answer service discovery`, last);
        await new Promise((resolve) => setTimeout(resolve, 3000));
      }
    }
  }
}

/**
 * The whole deploy. Returns the steps run (or, for a dry run, planned).
 * Throws PlanError (nothing was changed by the failing step) or
 * DeployStepError.
 */
export async function executeDeploy(options: ExecuteOptions): Promise<Step[]> {
  const { say } = options;
  say('==> check wrangler login ($ wrangler whoami --json)');
  let observed = await observe(options);
  if (observed.auth.loggedIn) {
    const account = checkAuth(observed)!;
    say(`     ${observed.auth.email ?? observed.auth.authType}, account ${account.name} (${account.id})`);
  }
  say(
    '==> look at the account ($ wrangler kv namespace list, wrangler r2 bucket list, wrangler r2 bucket lifecycle list, wrangler secret list) and the config',
  );
  let steps = planDeploy(options, observed);
  if (options.dryRun) {
    say(`plan (dry run: nothing is changed; ${steps.length} steps):`);
    steps.forEach((step, i) => describeStep(step, i + 1, options.configPath).forEach((line) => say(`  ${line}`)));
    return steps;
  }
  const done: Step[] = [];
  let previous = '';
  while (isSetupStep(steps[0]!)) {
    const step = steps[0]!;
    const key = JSON.stringify(step.kind === 'write-config' ? step.changes : step.describe);
    if (key === previous) {
      throw new DeployStepError(
        step.describe,
        'the step ran but the account still looks the same',
        '',
        'run `npm run deploy` again; if it repeats, compare `wrangler kv namespace list` / `wrangler r2 bucket list` with wrangler.toml',
      );
    }
    previous = key;
    describeStep(step, done.length + 1, options.configPath).forEach((line, i) => say(i === 0 ? `==> ${line}` : line));
    await runStep(step, options);
    done.push(step);
    observed = await observe(options, observed.auth);
    steps = planDeploy(options, observed);
  }
  for (const step of steps) {
    describeStep(step, done.length + 1, options.configPath).forEach((line, i) => say(i === 0 ? `==> ${line}` : line));
    await runStep(step, options);
    done.push(step);
  }
  return done;
}

export { PlanError };
