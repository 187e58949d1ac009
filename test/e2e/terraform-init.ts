import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { terraform } from '../tools';

const run = promisify(execFile);

export interface InitResult {
  ok: boolean;
  /** stdout and stderr of `terraform init`. */
  output: string;
  /** What terraform recorded in .terraform/modules/modules.json ([] when it installed no module). */
  modules: { Key: string; Source?: string; Version?: string; Dir: string }[];
}

/**
 * `terraform init -backend=false` in `work` as a user's machine would run it:
 * HOME is `work`, the CLI configuration is `work/cli.tfrc` (the caller writes
 * it and the root module), and `certPath` is the only trusted CA. Never
 * throws for a failed init: `ok` is false and `output` says why.
 */
export async function terraformInit(work: string, certPath: string, timeoutMs = 120_000): Promise<InitResult> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: work,
    TF_CLI_CONFIG_FILE: join(work, 'cli.tfrc'),
    SSL_CERT_FILE: certPath,
    CHECKPOINT_DISABLE: '1',
    TF_IN_AUTOMATION: '1',
  };
  let ok = true;
  let output: string;
  try {
    const { stdout, stderr } = await run(terraform!, ['init', '-input=false', '-no-color', '-backend=false'], { cwd: work, env, timeout: timeoutMs });
    output = stdout + stderr;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    ok = false;
    output = `${stdout ?? ''}${stderr ?? ''}`;
  }
  const manifest = join(work, '.terraform', 'modules', 'modules.json');
  const modules = existsSync(manifest) ? (JSON.parse(readFileSync(manifest, 'utf8')) as { Modules: InitResult['modules'] }).Modules : [];
  return { ok, output, modules };
}
