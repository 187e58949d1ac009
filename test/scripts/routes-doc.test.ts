import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/serving.md's "Every route" table against the router: the method and path of every route line in
 * src/index.ts (`.get('/path', …)`, the catch-all `.all('*', …)` aside) and of every row of the table are the
 * same set, so a route added without its row (or a row for a route removed) fails here.
 */
const root = join(import.meta.dirname, '..', '..');

function routed(): string[] {
  const source = readFileSync(join(root, 'src', 'index.ts'), 'utf8');
  return [...source.matchAll(/^\s*\.(get|post|put|delete|patch)\('([^']+)'/gm)].map((m) => `${m[1]!.toUpperCase()} ${m[2]}`);
}

function documented(): string[] {
  const doc = readFileSync(join(root, 'docs', 'serving.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Every route'), doc.indexOf('\n## ', doc.indexOf('## Every route') + 1));
  return [...section.matchAll(/^\| (GET|POST|PUT|DELETE|PATCH) \| `([^`]+)` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
}

describe('docs/serving.md lists every route', () => {
  it('the table and the router hold the same method and path pairs, each once', () => {
    const routes = routed();
    const rows = documented();
    expect(routes.length).toBeGreaterThan(40);
    expect(new Set(rows).size).toBe(rows.length);
    expect([...rows].sort()).toEqual([...routes].sort());
  });
});
