import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { constants, Script } from 'node:vm';

/**
 * Loading miniflare (CommonJS, one 3.9 MB entry file) is most of the CPU a local command spends before its
 * runtime starts, and compiling that file is much of it. Node 20 keeps no compile cache of its own
 * (module.enableCompileCache is Node 22), so the entry is compiled here with V8's code cache, kept in
 * node_modules/.cache/edge-registry/: measured ~40 ms of CPU less per local publish (0.275 → 0.235 s for
 * `require('miniflare')`, 27 Nov 2026). The cache is only a hint: V8 checks it against the source, its own
 * version and its flags, and compiles as before when it does not match (the cache is then written again).
 */

/**
 * miniflare's exports, as `require('miniflare')` gives them (the same module instance: it is registered in
 * require's cache), compiled with the code cache `requireWithCodeCache` keeps beside the packages. Throws
 * what requiring miniflare throws; a cache that cannot be read or written only costs the compile.
 */
export function loadMiniflare(): typeof import('miniflare') {
  const require = createRequire(import.meta.url);
  const filename = require.resolve('miniflare');
  const modules = filename.lastIndexOf(`${sep}node_modules${sep}`);
  if (modules < 0) return require('miniflare') as typeof import('miniflare');
  const cacheDir = join(filename.slice(0, modules), 'node_modules', '.cache', 'edge-registry');
  return requireWithCodeCache(filename, cacheDir).exports as typeof import('miniflare');
}

/**
 * Requires the CommonJS file `filename` (absolute) as `require` would — once per process: a file already in
 * require's cache is returned from there — compiled with the V8 code cache kept in `cacheDir` under a name
 * from the file's path, size and mtime and Node's version. `cache` says what happened: "used" (accepted),
 * "written" (none yet, or V8 refused it: made now), "loaded" (already required, nothing compiled). Throws
 * what the file's own code throws; errors reading or writing the cache are ignored (compiled without it).
 */
export function requireWithCodeCache(filename: string, cacheDir: string): { exports: unknown; cache: 'used' | 'written' | 'loaded' } {
  const require = createRequire(filename);
  const loaded = require.cache[filename];
  if (loaded) return { exports: loaded.exports, cache: 'loaded' };
  const cacheFile = codeCacheFile(filename, cacheDir);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // none yet
  }
  const source = readFileSync(filename, 'utf8');
  // The function wrapper Node's CommonJS loader puts around a file, a #! line made a comment (as Node does).
  const wrapped = `(function (exports, require, module, __filename, __dirname) { ${source.startsWith('#!') ? `//${source.slice(2)}` : source}\n});`;
  const script = new Script(wrapped, { filename, cachedData, importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER });
  const module = new Module(filename);
  module.filename = filename;
  module.paths = require.resolve.paths('x') ?? [];
  require.cache[filename] = module;
  try {
    (script.runInThisContext() as (...args: unknown[]) => void).call(module.exports, module.exports, require, module, filename, dirname(filename));
  } catch (error) {
    delete require.cache[filename];
    throw error;
  }
  module.loaded = true;
  const used = cachedData !== undefined && !script.cachedDataRejected;
  if (!used) {
    try {
      // After the top level ran: the functions it compiled are in the cache too. Written whole, then renamed.
      mkdirSync(cacheDir, { recursive: true });
      const temp = `${cacheFile}.${process.pid}`;
      writeFileSync(temp, script.createCachedData());
      renameSync(temp, cacheFile);
    } catch {
      // A read-only node_modules: compiled without a cache, as before.
    }
  }
  return { exports: module.exports, cache: used ? 'used' : 'written' };
}

/** Where requireWithCodeCache keeps the code cache of `filename`: named from its path, size and mtime and Node's version and architecture. */
export function codeCacheFile(filename: string, cacheDir: string): string {
  const stat = statSync(filename);
  const key = createHash('sha256').update(`${filename}\0${stat.size}\0${stat.mtimeMs}\0${process.version}\0${process.arch}`).digest('hex').slice(0, 16);
  return join(cacheDir, `code-${key}.bin`);
}
