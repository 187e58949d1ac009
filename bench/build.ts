import { execFile } from 'node:child_process';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');

/** Builds the Worker as `wrangler deploy` would ship it (entry: wrangler.toml's main, or `entry`) into `work`; returns the bundle's path. */
export async function build(work: string, entry: string | null): Promise<string> {
  const name = entry ? basename(entry, '.ts') : null;
  const outdir = join(work, name ?? 'worker');
  await run(join(root, 'node_modules', '.bin', 'wrangler'), ['deploy', ...(entry ? [entry] : []), '--dry-run', '--outdir', outdir], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1' },
  });
  return join(outdir, name ? `${name}.js` : 'index.js');
}
