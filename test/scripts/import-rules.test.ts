import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// The import rules `npm run deps` enforces (.dependency-cruiser.cjs), run on a small tree made here: each
// kind of forbidden import is reported by its rule, and an allowed one is not.
const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'edge-registry-import-rules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const files: Record<string, string> = {
  'tsconfig.json': '{ "compilerOptions": { "strict": true } }',
  'src/protocol/p.ts': 'export const p = 1;',
  'src/http/h.ts': "import { p } from '../protocol/p';\nexport const h = p;",
  'src/store/up.ts': "import { h } from '../http/h';\nexport const up = h;",
  'src/routes/r.ts': "import { page } from '../pages/page';\nexport const r = page;",
  'src/pages/page.ts': 'export const page = 1;',
  'src/mirror/m.ts': "import { cli } from '../../scripts/cli';\nexport const m = cli;",
  'scripts/cli.ts': 'export const cli = 1;',
  'src/access/a.ts': "import { b } from './b';\nexport const a = b;",
  'src/newfolder/n.ts': "import { p } from '../protocol/p';\nexport const n = p;",
  'src/access/b.ts': "import type { a } from './a';\nexport const b: typeof a = 1;",
};

describe('the import rules (npm run deps)', { timeout: 60_000 }, () => {
  it('report an upward import, a handler importing another, src importing scripts, a type-only cycle and a folder in no layer; a downward import passes', () => {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), `${text}\n`);
    }
    const run = spawnSync(
      join(root, 'node_modules', '.bin', 'depcruise'),
      ['src', 'scripts', '--config', join(root, '.dependency-cruiser.cjs'), '--output-type', 'err'],
      {
        cwd: dir,
        encoding: 'utf8',
      },
    );
    expect(run.status).not.toBe(0);
    const errors = run.stdout.split('\n').filter((line) => line.includes('error '));
    expect(errors.map((line) => line.trim().split(':')[0])).toEqual(
      expect.arrayContaining(['error layer-store', 'error no-sibling-handlers', 'error layer-services', 'error no-circular', 'error every-file-in-a-layer']),
    );
    expect(run.stdout).toMatch(/layer-store: src\/store\/up\.ts → src\/http\/h\.ts/);
    expect(run.stdout).toMatch(/no-sibling-handlers: src\/routes\/r\.ts → src\/pages\/page\.ts/);
    expect(run.stdout).toMatch(/layer-services: src\/mirror\/m\.ts → scripts\/cli\.ts/);
    expect(run.stdout).not.toMatch(/src\/http\/h\.ts → src\/protocol/);
    expect(run.stdout).toMatch(/every-file-in-a-layer: src\/newfolder\/n\.ts → src\/protocol\/p\.ts/);
    expect(errors).toHaveLength(5);
  });
});
