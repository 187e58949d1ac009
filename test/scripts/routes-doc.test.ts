import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/serving.md's "Every route" table against the router: the method and path of every route line in
 * src/index.ts (`.get('/path', …)`, the catch-all `.all('*', …)` aside) and of every row of the table are the
 * same set, so a route added without its row (or a row for a route removed) fails here; and each line's
 * guards (the handlers before the last, or asPublisherOf's target) are the ones its row names, in order, so
 * the guard column cannot drift from the router and no route line goes without a guard.
 */
const root = join(import.meta.dirname, '..', '..');

function routeLines(): [string, string[]][] {
  const source = readFileSync(join(root, 'src', 'index.ts'), 'utf8');
  return [...source.matchAll(/^\s*\.(get|post|put|delete|patch)\('([^']+)', (.*)$/gm)].map((m) => [`${m[1]!.toUpperCase()} ${m[2]}`, guardsOf(m[3]!)]);
}

/** The guards of a route line's handler list: leading plain names before the handler, or asPublisherOf(target, handler). */
function guardsOf(handlers: string): string[] {
  const publisher = /^asPublisherOf\((\w+), \w+\)/.exec(handlers);
  if (publisher) return [`asPublisherOf(${publisher[1]})`];
  return leadingNames(handlers);
}

function leadingNames(handlers: string): string[] {
  const names: string[] = [];
  let rest = handlers;
  for (let m = /^(\w+), /.exec(rest); m; m = /^(\w+), /.exec(rest)) {
    names.push(m[1]!);
    rest = rest.slice(m[0].length);
  }
  return names;
}

function rows(): [string, string[]][] {
  const doc = readFileSync(join(root, 'docs', 'serving.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Every route'), doc.indexOf('\n## ', doc.indexOf('## Every route') + 1));
  return [...section.matchAll(/^\| (GET|POST|PUT|DELETE|PATCH) \| `([^`]+)` \| ([^|]*) \|/gm)].map((m) => [
    `${m[1]} ${m[2]}`,
    [...m[3]!.matchAll(/`([^`]+)`/g)].map((g) => g[1]!).filter((g) => /^\w+(\(\w+\))?$/.test(g)),
  ]);
}

describe('docs/serving.md lists every route', () => {
  it('the table and the router hold the same method and path pairs, each once', () => {
    const routes = routeLines().map(([route]) => route);
    const documented = rows().map(([route]) => route);
    expect(routes.length).toBeGreaterThan(40);
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...routes].sort());
  });

  it('every route line names its guard, and its row names the same guards', () => {
    const documented = new Map(rows());
    for (const [route, guards] of routeLines()) {
      expect(guards.length, `${route} has no guard in src/index.ts`).toBeGreaterThan(0);
      expect(documented.get(route), route).toEqual(guards);
    }
  });
});
