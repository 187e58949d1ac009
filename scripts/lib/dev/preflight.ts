import { configProblems, CHECKED_SECRETS, type SettingProblem } from '../../../src/config';
import { readWranglerVars } from '../config';
import { readDevVars } from './vars';

/**
 * `npm start`'s pre-flight: the variables `wrangler dev ARGS` would give the
 * Worker — wrangler.toml's `[vars]` (or `[env.ENV.vars]` with `--env ENV`),
 * then `.dev.vars`, then `--var NAME:VALUE` arguments, each overriding the
 * one before — checked by the Worker's own parser (src/config.ts
 * configProblems) before wrangler starts, so a registry that would answer
 * 503 is refused at the terminal instead, naming each setting, where it is
 * set, and the fix (never its value). A secret `.dev.vars` lacks counts as
 * the one npm start generates.
 */

/** Where a variable's value came from, for the message. */
export type VarSource = 'wrangler.toml' | '.dev.vars' | '--var' | '--hostname' | '--public-documents' | 'the environment';

/** The `--var NAME:VALUE` arguments (also `--var=NAME:VALUE`), split at the first colon, as wrangler reads them. */
export function varArgs(args: readonly string[]): Record<string, string> {
  const vars: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const inline = /^--var=(.*)$/.exec(args[i]!);
    const value = inline ? inline[1]! : args[i] === '--var' ? args[i + 1] : undefined;
    const colon = value?.indexOf(':') ?? -1;
    if (value !== undefined && colon > 0) vars[value.slice(0, colon)] = value.slice(colon + 1);
  }
  return vars;
}

/** The `--env ENV` / `-e ENV` / `--env=ENV` argument, or undefined (the top level). */
export function envArg(args: readonly string[]): string | undefined {
  let env: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const inline = /^--env=(.+)$/.exec(args[i]!);
    if (inline) env = inline[1];
    else if ((args[i] === '--env' || args[i] === '-e') && args[i + 1] !== undefined) env = args[i + 1];
  }
  return env;
}

/** The merged variables and where each came from. */
export function mergeVars(layers: [VarSource, Record<string, string>][]): { vars: Record<string, string>; sources: Record<string, VarSource> } {
  const vars: Record<string, string> = {};
  const sources: Record<string, VarSource> = {};
  for (const [source, layer] of layers) {
    for (const [name, value] of Object.entries(layer)) {
      vars[name] = value;
      sources[name] = source;
    }
  }
  return { vars, sources };
}

// Stands for a secret the command is about to generate (32 random bytes): set, and long enough.
const GENERATED = 'generated-by-this-command-'.padEnd(43, 'x');

/**
 * configProblems of `vars`, a checked secret (URL_SIGNING_SECRET, SIGNING_KEY_SECRET) that is absent
 * counting as the one the command generates (npm start writes .dev.vars, npm run deploy puts the secret).
 * Used by `npm start` and `npm run deploy` (scripts/deploy.ts) before they start anything.
 */
export function preflightProblems(vars: Record<string, string>): readonly SettingProblem[] {
  const checked = { ...vars };
  for (const name of CHECKED_SECRETS) if (!(name in checked)) checked[name] = GENERATED;
  return configProblems(checked);
}

/** One problem for a terminal: its message and where its setting is set. */
export function describeProblem(problem: SettingProblem, sources: Record<string, VarSource>): string {
  return `${problem.message}${sources[problem.setting] ? ` (set in ${sources[problem.setting]})` : ''}`;
}

/** The problems of the variables `npm start ARGS` in `root` would run with (and where each setting is set). */
export async function startProblems(
  root: string,
  args: readonly string[],
): Promise<{ problems: readonly SettingProblem[]; sources: Record<string, VarSource> }> {
  const { vars, sources } = mergeVars([
    ['wrangler.toml', await readWranglerVars(`${root}/wrangler.toml`, envArg(args))],
    ['.dev.vars', readDevVars(root)],
    ['--var', varArgs(args)],
  ]);
  return { problems: preflightProblems(vars), sources };
}

/** The refusal `npm start` prints: every problem, where its setting is set, and that nothing was started. */
export function startRefusal(problems: readonly SettingProblem[], sources: Record<string, VarSource>): string {
  const lines = problems.map((p) => `  - ${describeProblem(p, sources)}`);
  return `edge-registry: npm start stopped before starting wrangler dev: the registry cannot run with this configuration:\n${lines.join('\n')}\n`;
}
