/**
 * `npm start`: runs the registry locally with `wrangler dev` on the local
 * KV/R2 state under .wrangler/ (the state `npm run publish-provider` writes
 * by default). Extra arguments pass through to wrangler dev (--port, --ip,
 * --var, --local-protocol …). On an empty state it says how to publish a
 * first provider. Creates .dev.vars with a URL_SIGNING_SECRET when missing.
 * Refuses to start (exit 1, before anything is written or started) when the
 * Worker could not run with its settings (scripts/lib/dev/preflight.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { emptyStateHint } from './lib/dev/hint';
import { devOrigin, devStateDir, recordServer } from './lib/dev/server';
import { ensureDevSecret, ensureDevVars, SIGNING_KEY_SECRET } from './lib/dev/vars';
import { startProblems, startRefusal } from './lib/dev/preflight';

const root = join(import.meta.dirname, '..');
const wrangler = join(root, 'node_modules', '.bin', 'wrangler');
const args = process.argv.slice(2);

// The Worker's own parser (src/config.ts) on the variables wrangler dev would give it: refuse here, naming each setting.
const { problems, sources } = await startProblems(root, args);
if (problems.length > 0) {
  process.stderr.write(startRefusal(problems, sources));
  process.exit(1);
}

// Private mode (`npm start -- --var ACCESS:private`) signs download URLs with URL_SIGNING_SECRET from .dev.vars.
if (ensureDevVars(root)) process.stderr.write('edge-registry: generated URL_SIGNING_SECRET in .dev.vars (git-ignored) for private mode\n');
// Registry-held signing keys (npm run keys -- generate --held-by-registry) are sealed under SIGNING_KEY_SECRET.
if (ensureDevSecret(root, SIGNING_KEY_SECRET))
  process.stderr.write('edge-registry: generated SIGNING_KEY_SECRET in .dev.vars (git-ignored) for registry-held signing keys\n');

if (!hasLocalProviders()) {
  process.stderr.write(emptyStateHint(args));
}

const child = spawn(wrangler, ['dev', ...args], { cwd: root, stdio: 'inherit' });
// `npm run demo` and other hints name this server's real address while it runs.
const forget = recordServer(devStateDir(root, args), devOrigin(args));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  forget();
  process.exit(code ?? (signal ? 1 : 0));
});

function hasLocalProviders(): boolean {
  // R2's local blobs live under .wrangler/state/v3/r2/<bucket>/blobs once anything was published.
  const r2 = join(root, '.wrangler', 'state', 'v3', 'r2');
  if (!existsSync(r2)) return false;
  return readdirSync(r2, { recursive: true }).some((entry) => String(entry).includes('blobs'));
}
