import { InputError } from '../../src/protocol/errors';

/**
 * Shared CLI plumbing: human output on stderr, exit codes (1 for errors the
 * user can fix, 2 for usage, 3 for anything else), no stack traces for
 * InputError.
 */

/** Writes a line to stderr. */
export const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

export class UsageError extends Error {}

/**
 * Runs `main` and exits: 0 on success; 2 with the usage text for a
 * UsageError (or an option parseArgs rejects); 1 with the message for an
 * InputError; 3 with the stack for anything else.
 */
export function run(main: () => Promise<void>, usage: string): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      if (error instanceof UsageError || (error as { code?: string })?.code?.startsWith?.('ERR_PARSE_ARGS')) {
        say(`error: ${(error as Error).message}\n\n${usage}`);
        process.exit(2);
      }
      if (error instanceof InputError) {
        say(`error: ${error.message}`);
        process.exit(1);
      }
      say(`error: ${(error as Error)?.stack ?? String(error)}`);
      process.exit(3);
    },
  );
}

/**
 * The options every command that reads or writes the registry's state takes
 * (parseArgs shapes): where the state is (local, or --remote with --env),
 * which wrangler.toml, and --help. Spread into each command's own options.
 */
export const STATE_OPTIONS = {
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
