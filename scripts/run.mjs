#!/usr/bin/env node
/**
 * `node scripts/run.mjs NAME [ARGS…]` runs scripts/NAME.ts, as `tsx scripts/NAME.ts` did, without compiling
 * TypeScript on every run: the script is bundled once with esbuild (already installed: wrangler and tsx
 * use it) into node_modules/.cache/edge-registry-cli/, keyed by the size and mtime of every file under
 * scripts/ and src/ and of package-lock.json, and the bundle is run from there. A few small pure-JS
 * packages (BUNDLED below) are bundled in; every other package stays external (loaded from node_modules as
 * before, openpgp, wrangler and miniflare only when used); each module's import.meta.dirname and import.meta.url keep naming
 * its own source file, so paths relative to the sources still resolve. Measured on the shared 2-core
 * machine: `tsx -e 0` 8.6 s under load (0.5 s idle) against `node -e 0` 1.1 s; see bench/README.md.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [name, ...rest] = process.argv.slice(2);
const entry = name ? join(root, 'scripts', `${name}.ts`) : '';
if (!name || !existsSync(entry)) {
  process.stderr.write(
    `usage: node scripts/run.mjs NAME [ARGS…] (NAME: one of ${readdirSync(join(root, 'scripts'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3))
      .join(', ')})\n`,
  );
  process.exit(2);
}

/** A key that changes whenever a source the bundle could include changes (one recursive listing per folder: ~4 ms, against ~9 ms walking it). */
function sourcesKey() {
  const lines = [];
  for (const top of ['scripts', 'src']) {
    for (const item of readdirSync(join(root, top), { recursive: true, withFileTypes: true })) {
      if (!item.isFile()) continue;
      const path = join(item.parentPath, item.name);
      const s = statSync(path);
      lines.push(`${relative(root, path)}\0${s.size}\0${s.mtimeMs}\n`);
    }
  }
  const hash = createHash('sha256').update(lines.sort().join(''));
  const lock = join(root, 'package-lock.json');
  if (existsSync(lock)) hash.update(`lock\0${statSync(lock).mtimeMs}\n`);
  return hash.digest('hex').slice(0, 16);
}

/** Packages bundled in (with the files of theirs they import); their versions are in package-lock.json, part of the key. */
const BUNDLED = new Set(['semver', '@noble/hashes', 'yazl', 'buffer-crc32', 'aws4fetch', 'jose', 'itty-router', 'marked', 'oauth4webapi']);

const cache = join(root, 'node_modules', '.cache', 'edge-registry-cli');
const bundle = join(cache, `${name}-${sourcesKey()}.mjs`);
if (!existsSync(bundle)) {
  const esbuild = await import('esbuild');
  mkdirSync(cache, { recursive: true });
  const partial = `${bundle}.${process.pid}.tmp`;
  await esbuild.build({
    entryPoints: [entry],
    outfile: partial,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'error',
    // Packages resolve from the repository's node_modules, wherever the bundle lives.
    banner: {
      js: `import { createRequire as __edgeRegistryRequire } from 'node:module'; const require = __edgeRegistryRequire(${JSON.stringify(pathToFileURL(entry).href)});`,
    },
    plugins: [
      {
        // The few small pure-JS packages every run loads go into the bundle: loading them from node_modules
        // (semver alone is ~50 CommonJS files) cost more than the rest of the start. Every other package
        // stays external, loaded from node_modules as before (openpgp, wrangler, miniflare: only when used).
        name: 'bundled-packages',
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, (args) => {
            const name = args.path
              .split('/')
              .slice(0, args.path.startsWith('@') ? 2 : 1)
              .join('/');
            return BUNDLED.has(name) ? undefined : { path: args.path, external: true };
          });
        },
      },
      {
        name: 'source-locations',
        setup(build) {
          build.onLoad({ filter: /\.ts$/ }, (args) => ({
            loader: 'ts',
            contents: readFileSync(args.path, 'utf8')
              .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
              .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
          }));
        },
      },
    ],
  });
  renameSync(partial, bundle); // whole or not at all: two runs building at once both end with a complete file
}
// The script sees itself as scripts/NAME.ts (usage lines, "is this the entry point" checks).
process.argv = [process.argv[0], entry, ...rest];
// EDGE_REGISTRY_TIMING=1 (scripts/lib/timing.ts): when the bundle starts loading, in ms since the process started.
if (process.env.EDGE_REGISTRY_TIMING === '1') process.stderr.write(`timing: ${performance.now().toFixed(1)} bundle loading\n`);
await import(pathToFileURL(bundle).href);
