import { WireShapeError } from './errors';

/**
 * Minimal checks for parsing a JSON value received from another party (a
 * registry, a mirror, a stored document) into one of the wire types of this
 * folder. Each throws WireShapeError naming the JSON path (`where`) and what
 * it expected; none coerces.
 */

export type JsonObject = Record<string, unknown>;

/** The value as an object (not null, not an array). */
export function asObject(value: unknown, where: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new WireShapeError(where, 'an object', value);
  return value as JsonObject;
}

export function asString(value: unknown, where: string): string {
  if (typeof value !== 'string') throw new WireShapeError(where, 'a string', value);
  return value;
}

export function asNumber(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new WireShapeError(where, 'a number', value);
  return value;
}

export function asArray(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new WireShapeError(where, 'an array', value);
  return value;
}

export function asStringArray(value: unknown, where: string): string[] {
  return asArray(value, where).map((item, index) => asString(item, `${where}[${index}]`));
}

/** `asX(value)` when the value is present, undefined when the property is absent. */
export function optional<T>(value: unknown, where: string, as: (value: unknown, where: string) => T): T | undefined {
  return value === undefined ? undefined : as(value, where);
}

/** Parses JSON text, throwing WireShapeError (not SyntaxError) naming `where` when it is not JSON. */
export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new WireShapeError(where, 'JSON', `${(error as Error).message}: ${text.slice(0, 80)}`);
  }
}

/** Parses text that should hold a JSON object: the object, or null (never throws) when it is not JSON or not an object. */
export function parseJsonObjectOrNull(text: string): JsonObject | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : null;
}
