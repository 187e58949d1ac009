import semver from 'semver';
import { InputError } from './errors';
import { truncate } from './address';
import { parseVersion } from './version';

/**
 * Terraform version constraints for providers: a comma-separated conjunction
 * of `=`, `!=`, `>`, `>=`, `<`, `<=`, `~>` or a bare version (meaning `=`).
 *
 * `~> 1.2` allows >= 1.2.0 and < 2.0.0; `~> 1.2.0` allows >= 1.2.0 and < 1.3.0;
 * `~> 1` behaves like `~> 1.0`. Missing parts of a version count as zero.
 * A pre-release version is selected only when a constraint names it exactly
 * (`= 1.3.0-beta` or `1.3.0-beta`); inexact operators never match pre-releases.
 */
export interface VersionConstraint {
  operator: '=' | '!=' | '>' | '>=' | '<' | '<=' | '~>';
  version: string;
  /** How many of major.minor.patch the constraint wrote (matters for `~>`). */
  parts: number;
}

// No "v" prefix: Terraform refuses "v1.2.3" in constraints.
const CLAUSE = /^(=|!=|>=|<=|>|<|~>)?\s*([0-9]+(?:\.[0-9]+){0,2}(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$/;

/** Parses a constraint string; throws InputError naming the clause that is wrong. An empty string allows every release. */
export function parseConstraints(source: string): VersionConstraint[] {
  if (source.trim() === '') return [];
  return source.split(',').map((clause) => {
    const trimmed = clause.trim();
    const match = CLAUSE.exec(trimmed);
    if (!match) throw new InputError(`version constraint "${truncate(trimmed)}" is not valid (e.g. "~> 1.2", ">= 1.0.0, < 2.0.0")`);
    const written = match[2]!;
    const [core, rest] = splitCore(written);
    const numbers = core.split('.');
    const padded = [...numbers, '0', '0'].slice(0, 3).join('.') + rest;
    const version = semver.valid(padded);
    if (!version) throw new InputError(`version constraint "${truncate(trimmed)}" has an invalid version`);
    return { operator: (match[1] ?? '=') as VersionConstraint['operator'], version, parts: numbers.length };
  });
}

function splitCore(written: string): [string, string] {
  const index = written.search(/[-+]/);
  return index === -1 ? [written, ''] : [written.slice(0, index), written.slice(index)];
}

/** True when `version` (strict semver) meets every constraint in the conjunction. */
export function meetsConstraints(version: string, constraints: readonly VersionConstraint[]): boolean {
  // semver.parse alone would accept "v1.2.3" or " 1.2.3", which no registry may list.
  const candidate = isStrictVersion(version) ? semver.parse(version) : null;
  if (!candidate) return false;
  if (candidate.prerelease.length > 0) {
    const namedExactly = constraints.some((c) => c.operator === '=' && semver.eq(c.version, candidate));
    if (!namedExactly) return false;
  }
  return constraints.every((constraint) => meetsOne(candidate, constraint));
}

function isStrictVersion(version: string): boolean {
  try {
    parseVersion(version);
    return true;
  } catch {
    return false;
  }
}

function meetsOne(candidate: semver.SemVer, { operator, version, parts }: VersionConstraint): boolean {
  switch (operator) {
    case '=':
      return semver.eq(candidate, version);
    case '!=':
      return !semver.eq(candidate, version);
    case '>':
      return semver.gt(candidate, version);
    case '>=':
      return semver.gte(candidate, version);
    case '<':
      return semver.lt(candidate, version);
    case '<=':
      return semver.lte(candidate, version);
    case '~>': {
      const lower = semver.parse(version)!;
      const upper = parts >= 3 ? `${lower.major}.${lower.minor + 1}.0` : `${lower.major + 1}.0.0`;
      return semver.gte(candidate, lower) && semver.lt(candidate, `${upper}-0`) && !isPrereleaseOfUpper(candidate, upper);
    }
  }
}

function isPrereleaseOfUpper(candidate: semver.SemVer, upper: string): boolean {
  return candidate.prerelease.length > 0 && `${candidate.major}.${candidate.minor}.${candidate.patch}` === upper;
}

/** The newest of `versions` meeting the constraints, or null. */
export function newestMatching(versions: readonly string[], constraints: readonly VersionConstraint[]): string | null {
  let best: string | null = null;
  for (const version of versions) {
    if (meetsConstraints(version, constraints) && (best === null || semver.gt(version, best))) best = version;
  }
  return best;
}
