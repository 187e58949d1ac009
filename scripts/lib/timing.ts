/**
 * EDGE_REGISTRY_TIMING=1: the CLI writes `timing: MS LABEL` lines to stderr, MS being milliseconds since
 * the process started (performance.now()), at the points bench/cli-wall.ts breaks a publish's wall time
 * into: the script running, each publish API request sent and answered, the process exiting. Unset (the
 * default), nothing is written and nothing else changes.
 */
export const TIMING_ENV = 'EDGE_REGISTRY_TIMING';

const enabled = process.env[TIMING_ENV] === '1';

/** Writes a timing line when EDGE_REGISTRY_TIMING=1; does nothing otherwise. */
export function timing(label: string): void {
  if (enabled) process.stderr.write(`timing: ${performance.now().toFixed(1)} ${label}\n`);
}

if (enabled) process.on('exit', (code) => timing(`exit ${code}`));
