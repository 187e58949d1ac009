import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The external tools the node tests run (terraform, gpg, go, chromium, setpriv), found
 * one way, and what a test does when one is missing: skip on a developer's machine, fail
 * in CI (CI=true), where .ci/run installs every tool and a skipped test would hide it.
 */

/** Whether this run is CI's: CI set to anything but "false" or empty. */
export const inCi = !!process.env.CI && process.env.CI !== 'false';

/** `name` as found on PATH, or undefined. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The installed terraform CLI (its usual install paths, then PATH), or undefined. */
export const terraform: string | undefined = ['/usr/local/bin/terraform', '/usr/bin/terraform'].find((path) => existsSync(path)) ?? onPath('terraform');

/** The browser the pages' tests drive through playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * For `describe.skipIf(missing(…))` / `it.skipIf(missing(…))`: true (skip) when `found`
 * is falsy outside CI; in CI a missing tool throws, so the test file fails with this
 * message instead of passing with its tests skipped.
 */
export function missing(tool: string, found: unknown): boolean {
  if (found) return false;
  if (inCi) throw new Error(`${tool} is not installed: in CI (CI=${process.env.CI}) every test runs, so install it (.ci/run does)`);
  if (!warned.has(tool)) console.warn(`skipped: ${tool} is not installed (.ci/run installs it; in CI this fails)`);
  warned.add(tool);
  return true;
}

const warned = new Set<string>();
