import semver from 'semver';

/** Orders semantic versions newest first (the order lists and pages show them in). */
export function compareVersionsDescending(a: string, b: string): number {
  return semver.rcompare(a, b);
}

/** The newest version that is not a prerelease, else the newest; null for an empty list. */
export function newestVersion(versions: readonly string[]): string | null {
  const sorted = [...versions].sort(compareVersionsDescending);
  return sorted.find((v) => semver.prerelease(v) === null) ?? sorted[0] ?? null;
}
