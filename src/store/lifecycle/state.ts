import { DamagedRecordError } from '../errors';
import { parseStoredJson } from '../records';

/**
 * The lifecycle of a provider's or module's versions: metadata beside the
 * published versions (whose bytes never change). One small JSON object per
 * provider or module in R2 (src/store/layout.ts providerLifecycleKey /
 * moduleLifecycleKey), changed only under the provider's or module's lease
 * with a conditional write: that write is the commit point, and the version
 * lists and pages are rebuilt from the records and this state.
 *
 * - deprecated (whole package or one version): still listed and installable;
 *   the message reaches users (providers: the versions response's `warnings`,
 *   which terraform init and tofu init print; pages for both).
 * - withdrawn (one version): left out of the version lists, "newest" and the
 *   pages' default, so constraints no longer select it; its download
 *   document and files stay reachable (lock files, audits, providers mirror).
 */

/** Who changed it, when, and the message users see. */
export interface LifecycleMark {
  message: string;
  /** ISO 8601. */
  at: string;
}

export interface VersionLifecycle {
  deprecated?: LifecycleMark;
  withdrawn?: LifecycleMark;
}

export interface LifecycleState {
  /** The whole provider or module is deprecated. */
  deprecated?: LifecycleMark;
  /** Per version; a version without marks has no entry. */
  versions: Record<string, VersionLifecycle>;
}

export const EMPTY_LIFECYCLE: LifecycleState = Object.freeze({ versions: Object.freeze({}) }) as LifecycleState;

/** True when nothing is deprecated or withdrawn. */
export function isEmptyLifecycle(state: LifecycleState): boolean {
  return !state.deprecated && Object.keys(state.versions).length === 0;
}

/** Versions that are withdrawn. */
export function withdrawnVersions(state: LifecycleState): Set<string> {
  return new Set(
    Object.entries(state.versions)
      .filter(([, v]) => v.withdrawn)
      .map(([version]) => version),
  );
}

/** `items` without the withdrawn versions (`versionOf` names each item's version). */
export function withoutWithdrawn<T>(items: readonly T[], state: LifecycleState, versionOf: (item: T) => string): T[] {
  const withdrawn = withdrawnVersions(state);
  return withdrawn.size === 0 ? [...items] : items.filter((item) => !withdrawn.has(versionOf(item)));
}

/**
 * Parses a stored lifecycle object. Throws DamagedRecordError naming `key`
 * when it is not the shape written by this code (a damaged object is never
 * silently read as "nothing withdrawn").
 */
export function parseLifecycle(text: string, key: string): LifecycleState {
  const value = parseStoredJson(text, key);
  const fail = (why: string): never => {
    throw new DamagedRecordError(key, why);
  };
  const mark = (m: unknown, where: string): LifecycleMark | undefined => {
    if (m === undefined) return undefined;
    const v = m as Partial<LifecycleMark> | null;
    if (typeof v !== 'object' || v === null || typeof v.message !== 'string' || typeof v.at !== 'string') fail(`${where} is not {message, at}`);
    return { message: v!.message!, at: v!.at! };
  };
  const s = value as Partial<LifecycleState> | null;
  if (typeof s !== 'object' || s === null || typeof s.versions !== 'object' || s.versions === null) return fail('no versions object');
  const versions: Record<string, VersionLifecycle> = {};
  for (const [version, entry] of Object.entries(s.versions as Record<string, unknown>)) {
    if (typeof entry !== 'object' || entry === null) fail(`versions.${version} is not an object`);
    const e = entry as Record<string, unknown>;
    const deprecated = mark(e.deprecated, `versions.${version}.deprecated`);
    const withdrawn = mark(e.withdrawn, `versions.${version}.withdrawn`);
    if (deprecated || withdrawn) versions[version] = { ...(deprecated ? { deprecated } : {}), ...(withdrawn ? { withdrawn } : {}) };
  }
  const deprecated = mark(s.deprecated, 'deprecated');
  return { ...(deprecated ? { deprecated } : {}), versions };
}

/** The stored form: keys sorted so equal states serialise equally. */
export function serializeLifecycle(state: LifecycleState): string {
  const versions = Object.fromEntries(
    Object.keys(state.versions)
      .sort()
      .map((v) => [v, state.versions[v]!]),
  );
  return JSON.stringify({ ...(state.deprecated ? { deprecated: state.deprecated } : {}), versions });
}

/**
 * The `warnings` of a provider's versions response: what `terraform init`
 * and `tofu init` print for the provider (provider-wide strings, so each
 * names its version). `name` is the provider's address as users write it.
 */
export function lifecycleWarnings(state: LifecycleState, name: string): string[] {
  const warnings: string[] = [];
  if (state.deprecated) warnings.push(`${name} is deprecated: ${state.deprecated.message}`);
  const versions = Object.keys(state.versions).sort(compareLoose);
  for (const version of versions) {
    const deprecated = state.versions[version]!.deprecated;
    if (deprecated && !state.versions[version]!.withdrawn) warnings.push(`${name} ${version} is deprecated: ${deprecated.message}`);
  }
  for (const version of versions) {
    const withdrawn = state.versions[version]!.withdrawn;
    if (withdrawn) {
      warnings.push(
        `${name} ${version} was withdrawn on ${withdrawn.at.slice(0, 10)}: ${withdrawn.message}. ` +
          `It is no longer offered: a lock file that pins ${version} stops with "the previously-selected version ${version} is no longer available"; ` +
          'run "terraform init -upgrade" (or "tofu init -upgrade") to select another version.',
      );
    }
  }
  return warnings;
}

function compareLoose(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}
