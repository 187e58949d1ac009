import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseLockFile } from '../installer';
import { terraform } from '../../tools';
import { FORGE_TOKEN, pushedBranches, readPushed, type Forge } from './forge';
import { runRenovate, type LogLine, type RenovateRun } from './renovate';
import { HOST, PROVIDER, type RenovateRegistry } from './registry';

/**
 * What the Renovate tests share: the bot configuration a platform team would
 * use (docs/update-bots.md), reading what Renovate proposed from its JSON
 * log, reading the lock files it pushed, and a real `terraform init
 * -lockfile=readonly` on a pushed branch through the same proxy.
 */
const run = promisify(execFile);

/** Renovate's global configuration for the forge stand-in; `token` goes into hostRules for our registry. */
export function botConfig(forge: Forge, options: { token?: string; dryRun?: 'lookup' } = {}): Record<string, unknown> {
  return {
    platform: 'gitea',
    endpoint: forge.endpoint,
    token: FORGE_TOKEN,
    repositories: [forge.repository],
    onboarding: false,
    requireConfig: 'optional',
    dependencyDashboard: false,
    prHourlyLimit: 0,
    prConcurrentLimit: 0,
    branchConcurrentLimit: 0,
    gitAuthor: 'Renovate Bot <bot@acme.test>',
    lockFileMaintenance: { enabled: true, schedule: ['at any time'] },
    ...(options.token ? { hostRules: [{ matchHost: HOST, token: options.token }] } : {}),
    ...(options.dryRun ? { dryRun: options.dryRun } : {}),
  };
}

export async function renovate(registry: RenovateRegistry, name: string, config: Record<string, unknown>): Promise<RenovateRun> {
  const result = await runRenovate(join(registry.dir, 'renovate', name), config, { proxy: registry.proxy.url, caPath: registry.certificate.certPath });
  writeFileSync(join(registry.dir, 'renovate', name, 'renovate.log'), result.output);
  return result;
}

export interface Proposal {
  packageFile: string;
  depName: string;
  currentValue: string;
  /** "newValue (updateType)" for each proposed update, e.g. "1.2.0 (minor)". */
  updates: string[];
  warnings: unknown[];
}

/** The dependencies Renovate found and what it proposed for each (its "packageFiles with updates" record). */
export function proposals(result: RenovateRun): Proposal[] {
  const record = result.lines.find((line) => (line.config as { terraform?: unknown } | undefined)?.terraform && line.msg === 'packageFiles with updates');
  if (!record) throw new Error(`Renovate logged no packageFiles record (exit ${result.code}):\n${tail(result)}`);
  const files = (record.config as { terraform: { packageFile: string; deps: Record<string, unknown>[] }[] }).terraform;
  return files.flatMap((file) =>
    file.deps.map((dep) => ({
      packageFile: file.packageFile,
      depName: String(dep.depName),
      currentValue: String(dep.currentValue),
      updates: ((dep.updates ?? []) as { newValue: string; updateType: string }[]).map((u) => `${u.newValue} (${u.updateType})`),
      warnings: (dep.warnings ?? []) as unknown[],
    })),
  );
}

/** Log records at warning level or above (40+) while Renovate worked on the repository. */
export function repositoryWarnings(result: RenovateRun): LogLine[] {
  return result.lines.filter((line) => line.level >= 40 && line.repository !== undefined);
}

export function tail(result: RenovateRun): string {
  return (
    result.lines
      .filter((line) => line.level >= 40)
      .map((line) => JSON.stringify(line).slice(0, 800))
      .join('\n') || result.output.slice(-4000)
  );
}

/** The provider's lock entry on `branch` in `dir`/.terraform.lock.hcl. */
export function lockOn(forge: Forge, branch: string, dir: string): { version: string; constraints?: string; hashes: string[] } | undefined {
  const text = readPushed(forge, branch, `${dir}/.terraform.lock.hcl`);
  return text === undefined ? undefined : parseLockFile(text).get(PROVIDER);
}

export { pushedBranches };

/**
 * `terraform init -lockfile=readonly` in `dir` of a fresh clone of `branch`,
 * reaching registry.acme.test through the proxy (HTTPS_PROXY) and trusting
 * only our certificate; `token` goes into a credentials block. Never throws.
 */
export async function terraformReadonlyInit(
  registry: RenovateRegistry,
  forge: Forge,
  branch: string,
  dir: string,
  token?: string,
): Promise<{ ok: boolean; output: string }> {
  const work = mkdtempSync(join(registry.dir, 'clone-'));
  execFileSync('git', ['clone', '-q', '--branch', branch, forge.bare, work], { stdio: 'pipe' });
  const cliConfig = join(work, 'cli.tfrc');
  writeFileSync(cliConfig, token ? `credentials "${HOST}" {\n  token = "${token}"\n}\n` : '# no credentials\n');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: work,
    TF_CLI_CONFIG_FILE: cliConfig,
    SSL_CERT_FILE: registry.certificate.certPath,
    HTTPS_PROXY: registry.proxy.url,
    CHECKPOINT_DISABLE: '1',
    TF_IN_AUTOMATION: '1',
  };
  try {
    const { stdout, stderr } = await run(terraform!, ['init', '-lockfile=readonly', '-input=false', '-no-color', '-backend=false'], {
      cwd: join(work, dir),
      env,
      timeout: 120_000,
    });
    return { ok: true, output: stdout + stderr };
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${stdout ?? ''}${stderr ?? ''}` };
  }
}

/** `terraform providers lock -platform=…` in a new directory requiring `version` of the provider (Dependabot's lock-file path). */
export async function terraformProvidersLock(
  registry: RenovateRegistry,
  version: string,
  platforms: string[],
  token?: string,
): Promise<{ ok: boolean; output: string; lock?: string }> {
  const work = mkdtempSync(join(registry.dir, 'lock-'));
  writeFileSync(
    join(work, 'main.tf'),
    `terraform {\n  required_providers {\n    thing = {\n      source  = "${PROVIDER}"\n      version = "${version}"\n    }\n  }\n}\n`,
  );
  const cliConfig = join(work, 'cli.tfrc');
  writeFileSync(cliConfig, token ? `credentials "${HOST}" {\n  token = "${token}"\n}\n` : '# no credentials\n');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: work,
    TF_CLI_CONFIG_FILE: cliConfig,
    SSL_CERT_FILE: registry.certificate.certPath,
    HTTPS_PROXY: registry.proxy.url,
    CHECKPOINT_DISABLE: '1',
    TF_IN_AUTOMATION: '1',
  };
  try {
    const { stdout, stderr } = await run(terraform!, ['providers', 'lock', '-no-color', ...platforms.map((p) => `-platform=${p}`)], {
      cwd: work,
      env,
      timeout: 120_000,
    });
    return { ok: true, output: stdout + stderr, lock: readFileSync(join(work, '.terraform.lock.hcl'), 'utf8') };
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${stdout ?? ''}${stderr ?? ''}` };
  }
}
