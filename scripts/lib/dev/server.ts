import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Where a running `npm start` can be reached, so hints name the real
 * address: start.ts records its origin in the state directory it serves
 * (`--persist-to DIR`, else .wrangler/state) while it runs, and `npm run
 * demo` (or any script writing that state) reads it back.
 */

const MARKER = 'edge-registry-server.json';

/** The port `wrangler dev ARGS` listens on: the last --port given (as wrangler reads it), else 8787. */
export function devPort(args: readonly string[]): string {
  let port = '8787';
  for (let i = 0; i < args.length; i++) {
    const inline = /^--port=(\d+)$/.exec(args[i]!);
    if (inline) port = inline[1]!;
    else if (args[i] === '--port' && /^\d+$/.test(args[i + 1] ?? '')) port = args[i + 1]!;
  }
  return port;
}

/** The origin `wrangler dev ARGS` serves: http or https (`--local-protocol`), localhost, its port. */
export function devOrigin(args: readonly string[]): string {
  let protocol = 'http';
  for (let i = 0; i < args.length; i++) {
    const inline = /^--local-protocol=(https?)$/.exec(args[i]!);
    if (inline) protocol = inline[1]!;
    else if (args[i] === '--local-protocol' && /^https?$/.test(args[i + 1] ?? '')) protocol = args[i + 1]!;
  }
  return `${protocol}://localhost:${devPort(args)}`;
}

/** The state directory `wrangler dev ARGS` run from `root` persists to: the last --persist-to, else ROOT/.wrangler/state. */
export function devStateDir(root: string, args: readonly string[]): string {
  let dir = join(root, '.wrangler', 'state');
  for (let i = 0; i < args.length; i++) {
    const inline = /^--persist-to=(.+)$/.exec(args[i]!);
    if (inline) dir = resolve(root, inline[1]!);
    else if (args[i] === '--persist-to' && args[i + 1] !== undefined) dir = resolve(root, args[i + 1]!);
  }
  return dir;
}

/** Records that process `pid` serves `stateDir` at `origin` (creating the directory); returns the function that removes the record. Never throws. */
export function recordServer(stateDir: string, origin: string, pid = process.pid): () => void {
  const path = join(stateDir, MARKER);
  try {
    mkdirSync(stateDir, { recursive: true });
    writeFileSync(path, `${JSON.stringify({ origin, pid })}\n`);
  } catch {
    return () => {}; // an unwritable state directory: hints fall back to the default address
  }
  return () => rmSync(path, { force: true });
}

/** The origin of the `npm start` serving `stateDir` now, or null (none recorded, or its process is gone). */
export function runningServer(stateDir: string): string | null {
  const path = join(stateDir, MARKER);
  if (!existsSync(path)) return null;
  try {
    const { origin, pid } = JSON.parse(readFileSync(path, 'utf8')) as { origin: string; pid: number };
    process.kill(pid, 0); // throws when no such process
    return origin;
  } catch {
    return null;
  }
}
