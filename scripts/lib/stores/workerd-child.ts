import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { createHash } from 'node:crypto';

/**
 * Miniflare runs the local runtime as a child process (workerd) that does not
 * exit when its parent dies. A publish killed with SIGKILL (the OOM killer, a
 * cancelled CI job, `kill -9`) would leave its workerd running for ever: ~75
 * MB each, holding the local state's SQLite files open. On Linux with
 * util-linux's `setpriv`, the runtime is started through a wrapper that asks
 * the kernel to SIGKILL it when the parent goes (PR_SET_PDEATHSIG); elsewhere
 * nothing changes.
 *
 * Contract: sets MINIFLARE_WORKERD_PATH (read by Miniflare at each start) to
 * the wrapper, unless the user set it or the platform has no setpriv; returns
 * whether the wrapper is in use. Never throws: a failure only means the old
 * behaviour.
 */
export function tieLocalRuntimeToThisProcess(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.MINIFLARE_WORKERD_PATH) return env.MINIFLARE_WORKERD_PATH === wrapperPath;
  if (wrapperPath === undefined) wrapperPath = writeWrapper();
  if (wrapperPath) env.MINIFLARE_WORKERD_PATH = wrapperPath;
  return Boolean(wrapperPath);
}

let wrapperPath: string | null | undefined;

function writeWrapper(): string | null {
  try {
    if (process.platform !== 'linux') return null;
    // The workerd binary Miniflare itself would run (its own dependency).
    const fromMiniflare = createRequire(createRequire(import.meta.url).resolve('miniflare'));
    const workerd = (fromMiniflare('workerd') as { default: string }).default;
    const script = `#!/bin/sh\nexec setpriv --pdeathsig KILL -- ${shellQuote(workerd)} "$@"\n`;
    // Beside the packages (node_modules/.cache), where executables already run; /tmp may be mounted noexec.
    const modules = workerd.lastIndexOf(`${sep}node_modules${sep}`);
    const dir = modules >= 0 ? join(workerd.slice(0, modules), 'node_modules', '.cache', 'edge-registry') : join(tmpdir(), 'edge-registry');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `workerd-${createHash('sha256').update(script).digest('hex').slice(0, 12)}.sh`);
    if (!existsSync(path)) {
      // Written whole under another name, then renamed: a concurrent starter never runs half a script.
      const temp = `${path}.${process.pid}`;
      writeFileSync(temp, script);
      chmodSync(temp, 0o755);
      renameSync(temp, path);
    }
    // Only a wrapper that runs is used (a noexec mount, a setpriv without --pdeathsig: the old behaviour). That it
    // ran is remembered beside it (`.ok`), so later runs skip starting it (~25 ms of each local command's wall).
    if (existsSync(`${path}.ok`)) return path;
    if (spawnSync(path, ['--version'], { stdio: 'ignore', timeout: 10_000 }).status !== 0) return null;
    writeFileSync(`${path}.ok`, '');
    return path;
  } catch {
    return null;
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
