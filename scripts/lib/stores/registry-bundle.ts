import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * The registry Worker as `wrangler deploy` ships it (`wrangler deploy
 * --dry-run`: the same esbuild bundle of wrangler.toml's main), minified
 * (`--minify`: the same modules and names, 1.5 → 0.9 MB), for the local
 * publish, which serves the publish API in-process on the local state
 * (./local.ts). Every local publish hands the bundle to the runtime (Miniflare
 * copies it into workerd's configuration, workerd parses it): minified, that
 * costs ~20–40 ms less of the CLI's CPU and less of workerd's (measured 27 Nov
 * 2026). Building takes ~1.8 s, so the bundle is kept in
 * node_modules/.cache/edge-registry/worker-min-HASH/, HASH over every file of
 * src/, wrangler.toml and package-lock.json: any edit builds it again, an
 * unchanged tree reuses it (hashing the tree: a few ms).
 */

const root = join(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);

/**
 * The path of the bundle's entry module (index.js), built when the cache has
 * none for the current sources. Throws an Error with wrangler's output when
 * the build fails (a source that does not compile: exit 3, not the user's input).
 */
export async function registryBundle(): Promise<string> {
  const dir = join(root, 'node_modules', '.cache', 'edge-registry', `worker-min-${sourceHash()}`);
  const entry = join(dir, 'index.js');
  if (existsSync(entry)) return entry;
  mkdirSync(join(dir, '..'), { recursive: true });
  // Built beside, then renamed into place: a concurrent publish never loads half a bundle.
  const temp = `${dir}.${process.pid}-${Date.now()}`;
  try {
    await run(join(root, 'node_modules', '.bin', 'wrangler'), ['deploy', '--dry-run', '--minify', '--outdir', temp, '--config', join(root, 'wrangler.toml')], {
      cwd: root,
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1' },
    });
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`building the registry Worker (wrangler deploy --dry-run) failed:\n${stderr || stdout || (error as Error).message}`);
  }
  try {
    renameSync(temp, dir);
  } catch {
    // Another publish put the same bundle there first.
    rmSync(temp, { recursive: true, force: true });
  }
  return entry;
}

/** SHA-256 (24 hex digits) over the names and bytes of every file of src/, wrangler.toml and package-lock.json. */
function sourceHash(): string {
  const hash = createHash('sha256');
  const files = (readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath ?? (d as unknown as { path: string }).path, d.name))
    .sort();
  for (const path of [...files, join(root, 'wrangler.toml'), join(root, 'package-lock.json')]) {
    hash.update(`${path.slice(root.length)}\0`);
    hash.update(existsSync(path) ? readFileSync(path) : '');
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 24);
}
