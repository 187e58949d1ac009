import { InputError } from './errors';
import { truncate } from './address';
import { parseConstraints, type VersionConstraint } from './constraints';

/**
 * What the policy's provider rules (./policy.ts) and module rules
 * (./module-policy.ts) parse alike: JSON objects, unknown fields refused,
 * and each rule's required `source` and `versions`.
 */

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Throws InputError naming `where`, the field and the allowed ones for a field not in `allowed`. */
export function refuseUnknown(value: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new InputError(`${where}: unknown field "${truncate(key)}" (allowed: ${allowed.filter((k) => k !== '$comment').join(', ')})`);
    }
  }
}

/**
 * One rule entry: an object with only `fields`, a string `source` (the
 * message shows `sourceExample`) and a `versions` constraint. Throws
 * InputError naming `where` for each of those, `where.versions` for a
 * malformed constraint.
 */
export function ruleEntry(
  raw: unknown,
  where: string,
  fields: readonly string[],
  sourceExample: string,
  versionsExample: string,
): { entry: Record<string, unknown>; source: string; versions: string; constraints: VersionConstraint[] } {
  if (!isObject(raw)) throw new InputError(`${where}: expected an object`);
  refuseUnknown(raw, fields, where);
  if (typeof raw.source !== 'string') throw new InputError(`${where}: "source" (e.g. "${sourceExample}") is required`);
  if (typeof raw.versions !== 'string') throw new InputError(`${where}: "versions" (a constraint such as "${versionsExample}") is required`);
  try {
    return { entry: raw, source: raw.source, versions: raw.versions, constraints: parseConstraints(raw.versions) };
  } catch (error) {
    throw new InputError(`${where}.versions: ${(error as Error).message}`);
  }
}
