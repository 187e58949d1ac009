import semver from 'semver';
import { InputError } from './errors';
import { truncate } from './address';

const MAX_VERSION_LENGTH = 128;

/**
 * Accepts only a strict semantic version exactly as written ("1.2.3",
 * "1.2.3-beta.1", "1.2.3+build"): no leading "v", no "=", no missing parts.
 * Returns it unchanged; throws InputError otherwise.
 */
export function parseVersion(raw: string): string {
  if (raw.length > MAX_VERSION_LENGTH) throw new InputError(`version "${truncate(raw)}" is too long`);
  const parsed = semver.parse(raw, { loose: false });
  const canonical = parsed ? parsed.version + (parsed.build.length ? `+${parsed.build.join('.')}` : '') : null;
  if (!parsed || canonical !== raw) {
    throw new InputError(`version "${truncate(raw)}" is not a semantic version like 1.2.3 or 1.2.3-beta.1`);
  }
  return raw;
}

/** Sorts versions ascending by semantic-version precedence (a copy). */
export function sortVersions(versions: readonly string[]): string[] {
  return [...versions].sort(semver.compare);
}

/** Orders semantic versions newest first (the order lists and pages show them in). */
export function compareVersionsDescending(a: string, b: string): number {
  return semver.rcompare(a, b);
}

/** The newest version that is not a prerelease; null when every one is (or there is none). */
export function newestStable(versions: readonly string[]): string | null {
  return [...versions].sort(compareVersionsDescending).find((v) => semver.prerelease(v) === null) ?? null;
}

/** The version a list or page leads with: newestStable, else the newest prerelease; null for an empty list. */
export function newestVersion(versions: readonly string[]): string | null {
  const sorted = [...versions].sort(compareVersionsDescending);
  return sorted.find((v) => semver.prerelease(v) === null) ?? sorted[0] ?? null;
}
