import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * `npm install` prints EBADENGINE when an installed package's `engines.node`
 * excludes the running Node. package.json's own `engines` says which Node
 * versions the project supports; every package in the lock file must accept
 * all of them, so no supported Node ever sees that warning.
 */
const root = join(import.meta.dirname, '..', '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

describe('Node engines (package.json, package-lock.json)', () => {
  it('the project supports the Node the machines and README use (20) and the running one', () => {
    expect(semver.satisfies('20.19.0', manifest.engines.node)).toBe(true);
    expect(semver.satisfies(process.versions.node, manifest.engines.node)).toBe(true);
  });

  it('every locked package accepts every Node version package.json claims (no EBADENGINE on install)', () => {
    const refusing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (path === '' || range === undefined) continue;
      if (!semver.subset(manifest.engines.node, range)) refusing.push(`${path.replace(/^.*node_modules\//, '')}@${entry.version}: node ${range}`);
    }
    expect(refusing).toEqual([]);
  });
});
