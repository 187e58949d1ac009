import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ConfigError, InputError, UpstreamError } from '../../src/protocol/errors';
import { SecretMismatchError, StoreRefusal } from '../../src/store/errors';

/**
 * Shared CLI plumbing for every script a user runs (publish-provider, keys,
 * token, demo, …): human output on stderr, one exit-code convention, and no
 * stack traces unless asked for.
 *
 * Exit codes, decided here and nowhere else (the Worker's counterpart is
 * src/http/errors.ts):
 *   0 success;
 *   1 an error the user can fix (isUserFixable): InputError (bad input, a
 *     refused publish), ConfigError and SecretMismatchError (a setting to fix,
 *     e.g. SIGNING_KEY_SECRET not set for a held key, or not the one it was
 *     sealed with) and every StoreRefusal of src/store/errors.ts —
 *     VersionConflictError, NotStoredError, LeaseBusyError;
 *   2 usage (UsageError, or an option parseArgs rejects);
 *   3 anything else, StoreFailure included (StoredReleaseMismatchError,
 *     ListRebuildRaceError, LeaseLostError, DamagedRecordError, SealError):
 *     an internal or infrastructure failure — one line saying what failed
 *     and to run again; the stack trace with --verbose or
 *     EDGE_REGISTRY_VERBOSE=1.
 */

/** Writes a line to stderr. */
export const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

export class UsageError extends Error {}

/** Environment variable that turns on stack traces, like --verbose. */
export const VERBOSE_ENV = 'EDGE_REGISTRY_VERBOSE';

/** True when the command line has --verbose or EDGE_REGISTRY_VERBOSE is set. */
export function verboseRequested(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): boolean {
  return argv.includes('--verbose') || ['1', 'true', 'yes'].includes((env[VERBOSE_ENV] ?? '').toLowerCase());
}

/** True for an error the user can fix (exit 1, audited as `refused`): bad input, a store refusal, or a setting to fix (ConfigError, SecretMismatchError). */
export function isUserFixable(error: unknown): error is Error {
  return (
    error instanceof InputError ||
    error instanceof UpstreamError ||
    error instanceof StoreRefusal ||
    error instanceof ConfigError ||
    error instanceof SecretMismatchError
  );
}

/** True for a usage error (exit 2): UsageError or an option parseArgs rejects. */
function isUsageError(error: unknown): error is Error {
  return error instanceof UsageError || Boolean((error as { code?: string })?.code?.startsWith?.('ERR_PARSE_ARGS'));
}

/**
 * What `run` prints for an error and the exit code, without exiting (for
 * tests and for scripts that need to clean up first).
 */
export function describeFailure(error: unknown, usage: string, verbose = verboseRequested()): { code: 1 | 2 | 3; text: string } {
  if (isUsageError(error)) return { code: 2, text: `error: ${error.message}\n\n${usage}` };
  if (isUserFixable(error)) return { code: 1, text: `error: ${error.message}` };
  const message = oneLine(error instanceof Error ? error.message : String(error)) || (error as Error)?.name || 'unknown error';
  const trace = (error as Error)?.stack ?? String(error);
  const saved = verbose ? null : saveTrace(trace);
  const text =
    `error: ${message} — an internal or infrastructure failure, not a problem with your input; nothing half-done is served, so run the same command again` +
    (verbose ? `\n${trace}` : saved ? ` (stack trace in ${saved}; --verbose prints it)` : ' (add --verbose for the stack trace)');
  return { code: 3, text };
}

/** Writes an internal failure's trace to a log file under the temp dir; its path, or null when it can't be written. */
function saveTrace(trace: string): string | null {
  try {
    const dir = join(tmpdir(), 'edge-registry', 'logs');
    mkdirSync(dir, { recursive: true });
    const command = basename(process.argv[1] ?? 'cli').replace(/\.[cm]?[jt]s$/, '');
    const path = join(dir, `${command}-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}.log`);
    writeFileSync(path, `${trace}\n`, { mode: 0o600 });
    return path;
  } catch {
    return null;
  }
}

/**
 * Runs `main` and exits with the convention above. The "--verbose" flag is
 * read from process.argv, so commands need not declare it (STATE_OPTIONS
 * does, for parseArgs's strict mode).
 */
export function run(main: () => Promise<void>, usage: string): void {
  main().then(
    () => process.exit(process.exitCode ?? 0),
    (error: unknown) => {
      const { code, text } = describeFailure(error, usage);
      say(text);
      process.exit(code);
    },
  );
}

function oneLine(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .join(' ')
    .slice(0, 500);
}

/**
 * The options every command that reads or writes the registry's state takes
 * (parseArgs shapes): where the state is (local, or --remote with --env),
 * which wrangler.toml, and --help. Spread into each command's own options.
 */
export const STATE_OPTIONS = {
  verbose: { type: 'boolean' },
  remote: { type: 'boolean' },
  env: { type: 'string' },
  config: { type: 'string' },
  'persist-to': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** STATE_OPTIONS plus what the signing commands add: the registry hostname and the local keys folder. */
export const SIGNING_STATE_OPTIONS = {
  ...STATE_OPTIONS,
  hostname: { type: 'string' },
  'keys-dir': { type: 'string' },
  'key-file': { type: 'string' },
  json: { type: 'boolean' },
} as const;

/**
 * The checks every command taking STATE_OPTIONS makes on where it writes:
 * --env only with --remote, and (for the publish commands) --registry not
 * with --remote. Throws UsageError (exit 2) naming the conflict.
 */
export function checkStateTarget(values: { env?: string; remote?: boolean; registry?: string }): void {
  if (values.env && !values.remote) throw new UsageError('--env selects the remote environment; use it with --remote');
  if (values.registry !== undefined && values.remote) throw new UsageError('--registry publishes through the API and --remote writes storage: use one');
}

/** Where a command reads and writes, from its STATE_OPTIONS values (plus --hostname), as the publish and lifecycle functions take it. Never throws. */
export function stateTarget(values: { remote?: boolean; env?: string; config?: string; 'persist-to'?: string; hostname?: string }): {
  remote?: boolean;
  env?: string;
  configPath?: string;
  persistTo?: string;
  hostname?: string;
} {
  return { remote: values.remote, env: values.env, configPath: values.config, persistTo: values['persist-to'], hostname: values.hostname };
}
