import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { codeCacheFile, loadMiniflare, requireWithCodeCache } from '../../../scripts/lib/stores/code-cache';
import { tempDir } from '../helpers';

const work = tempDir('code-cache');
afterAll(() => work.cleanup());
const require = createRequire(import.meta.url);

describe('requireWithCodeCache (loading miniflare with V8 code cache)', () => {
  it('requires a CommonJS file as require does: writes the cache, then uses it; a file already required is returned as is', () => {
    const file = join(work.dir, 'answer.cjs');
    writeFileSync(
      file,
      '#!/usr/bin/env node\nconst { join } = require("node:path");\nmodule.exports = { answer: 42, file: __filename, dir: __dirname, joined: join("a", "b"), self: module.id };\n',
    );
    const cacheDir = join(work.dir, 'cache');
    const first = requireWithCodeCache(file, cacheDir);
    expect(first.cache).toBe('written');
    expect(first.exports).toMatchObject({ answer: 42, file, dir: work.dir, joined: join('a', 'b') });
    expect(readdirSync(cacheDir)).toHaveLength(1);
    expect(require(file)).toBe(first.exports); // registered in require's cache: one instance
    expect(requireWithCodeCache(file, cacheDir)).toEqual({ exports: first.exports, cache: 'loaded' });
    delete require.cache[file];
    const second = requireWithCodeCache(file, cacheDir);
    expect(second.cache).toBe('used');
    expect(second.exports).toMatchObject({ answer: 42 });
    delete require.cache[file];
  });

  it('a cache V8 refuses (damaged bytes) is compiled without and written again; a throwing file throws and is not cached', () => {
    const file = join(work.dir, 'other.cjs');
    const cacheDir = join(work.dir, 'cache-damaged');
    writeFileSync(file, 'module.exports = { other: [1, 2, 3].map((n) => n * 2) };\n');
    mkdirSync(cacheDir);
    writeFileSync(codeCacheFile(file, cacheDir), 'not a code cache');
    expect(requireWithCodeCache(file, cacheDir)).toEqual({ exports: { other: [2, 4, 6] }, cache: 'written' });
    expect(readFileSync(codeCacheFile(file, cacheDir), 'utf8')).not.toBe('not a code cache');
    delete require.cache[file];

    const throwing = join(work.dir, 'throwing.cjs');
    writeFileSync(throwing, 'throw new Error("boom");\n');
    expect(() => requireWithCodeCache(throwing, cacheDir)).toThrow('boom');
    expect(require.cache[throwing]).toBeUndefined();
  });

  it('loadMiniflare gives the package require gives', () => {
    const { Miniflare } = loadMiniflare();
    expect(Miniflare).toBe((require('miniflare') as typeof import('miniflare')).Miniflare);
  });
});
