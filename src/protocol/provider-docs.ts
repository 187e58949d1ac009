import { InputError } from './errors';
import type { AttributeMode, DocAttribute, DocBlock, DocEntity, DocSchema, ProviderDocs } from './provider-docs-shape';

/**
 * Provider docs as the publish API receives them (`"docs"` of a provider
 * manifest): the normalised schema the CLI builds from a Provider Code
 * Specification or `terraform providers schema -json`
 * (scripts/lib/provider/docs/), checked here field by field because the
 * sender is a publisher, not the operator. Unknown keys are refused, every
 * string is bounded, nesting is at most MAX_DEPTH deep; the result holds
 * only the known fields. The pages escape every string they show.
 */

const MODES: readonly AttributeMode[] = ['required', 'optional', 'computed', 'computed_optional'];
const ATTRIBUTE_NESTING = ['single', 'list', 'set', 'map'] as const;
const BLOCK_NESTING = ['single', 'list', 'set', 'map', 'group'] as const;
const NAME = /^[A-Za-z0-9_.-]{1,200}$/;
const MAX_TEXT = 64 * 1024;
const MAX_ITEMS = 5000;
const MAX_DEPTH = 16;

/** Parses `value` as docs of provider `type`. Throws InputError (400) naming the JSON path of the first problem. */
export function parseProviderDocs(value: unknown, type: string): ProviderDocs {
  const o = object(value, 'docs', ['source', 'provider', 'providerSchema', 'resources', 'dataSources']);
  if (o.source !== 'provider-code-spec' && o.source !== 'terraform-schema')
    throw new InputError('docs.source must be "provider-code-spec" or "terraform-schema"');
  if (o.provider !== type) throw new InputError(`docs.provider must be "${type}", the provider being published`);
  return {
    source: o.source,
    provider: type,
    providerSchema: schema(o.providerSchema, 'docs.providerSchema', 0),
    resources: list(o.resources, 'docs.resources').map((e, i) => entity(e, `docs.resources[${i}]`)),
    dataSources: list(o.dataSources, 'docs.dataSources').map((e, i) => entity(e, `docs.dataSources[${i}]`)),
  };
}

function entity(value: unknown, where: string): DocEntity {
  const o = object(value, where, ['name', 'schema']);
  return { name: name(o.name, `${where}.name`), schema: schema(o.schema, `${where}.schema`, 0) };
}

function schema(value: unknown, where: string, depth: number): DocSchema {
  const o = object(value, where, ['description', 'deprecation', 'attributes', 'blocks']);
  return {
    ...texts(o, where, ['description', 'deprecation']),
    attributes: list(o.attributes, `${where}.attributes`).map((a, i) => attribute(a, `${where}.attributes[${i}]`, depth)),
    blocks: list(o.blocks, `${where}.blocks`).map((b, i) => block(b, `${where}.blocks[${i}]`, depth)),
  };
}

function attribute(value: unknown, where: string, depth: number): DocAttribute {
  if (depth > MAX_DEPTH) throw new InputError(`${where}: nested more than ${MAX_DEPTH} deep`);
  const o = object(value, where, ['name', 'type', 'mode', 'sensitive', 'deprecation', 'description', 'nested']);
  if (typeof o.mode !== 'string' || !MODES.includes(o.mode as AttributeMode)) throw new InputError(`${where}.mode must be one of ${MODES.join(', ')}`);
  if (o.sensitive !== undefined && typeof o.sensitive !== 'boolean') throw new InputError(`${where}.sensitive must be true or false`);
  const result: DocAttribute = {
    name: name(o.name, `${where}.name`),
    type: text(o.type, `${where}.type`),
    mode: o.mode as AttributeMode,
    ...(o.sensitive !== undefined ? { sensitive: o.sensitive } : {}),
    ...texts(o, where, ['deprecation', 'description']),
  };
  if (o.nested !== undefined) {
    const n = object(o.nested, `${where}.nested`, ['nesting', 'attributes']);
    if (!ATTRIBUTE_NESTING.includes(n.nesting as never)) throw new InputError(`${where}.nested.nesting must be one of ${ATTRIBUTE_NESTING.join(', ')}`);
    result.nested = {
      nesting: n.nesting as (typeof ATTRIBUTE_NESTING)[number],
      attributes: list(n.attributes, `${where}.nested.attributes`).map((a, i) => attribute(a, `${where}.nested.attributes[${i}]`, depth + 1)),
    };
  }
  return result;
}

function block(value: unknown, where: string, depth: number): DocBlock {
  if (depth > MAX_DEPTH) throw new InputError(`${where}: nested more than ${MAX_DEPTH} deep`);
  const o = object(value, where, ['name', 'nesting', 'description', 'deprecation', 'minItems', 'maxItems', 'attributes', 'blocks']);
  if (!BLOCK_NESTING.includes(o.nesting as never)) throw new InputError(`${where}.nesting must be one of ${BLOCK_NESTING.join(', ')}`);
  for (const key of ['minItems', 'maxItems'] as const) {
    if (o[key] !== undefined && !(Number.isSafeInteger(o[key]) && (o[key] as number) >= 0)) throw new InputError(`${where}.${key} must be a whole number ≥ 0`);
  }
  return {
    name: name(o.name, `${where}.name`),
    nesting: o.nesting as DocBlock['nesting'],
    ...texts(o, where, ['description', 'deprecation']),
    ...(o.minItems !== undefined ? { minItems: o.minItems as number } : {}),
    ...(o.maxItems !== undefined ? { maxItems: o.maxItems as number } : {}),
    attributes: list(o.attributes, `${where}.attributes`).map((a, i) => attribute(a, `${where}.attributes[${i}]`, depth + 1)),
    blocks: list(o.blocks, `${where}.blocks`).map((b, i) => block(b, `${where}.blocks[${i}]`, depth + 1)),
  };
}

function object(value: unknown, where: string, keys: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InputError(`${where} must be an object`);
  const unknown = Object.keys(value).find((k) => !keys.includes(k));
  if (unknown !== undefined) throw new InputError(`${where}: unknown field "${unknown.slice(0, 100)}"`);
  return value as Record<string, unknown>;
}

function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new InputError(`${where} must be a list`);
  if (value.length > MAX_ITEMS) throw new InputError(`${where} has ${value.length} items; at most ${MAX_ITEMS}`);
  return value;
}

function name(value: unknown, where: string): string {
  if (typeof value !== 'string' || !NAME.test(value)) throw new InputError(`${where} must be a name of letters, digits, "_", "-" or "." (1-200)`);
  return value;
}

function text(value: unknown, where: string): string {
  if (typeof value !== 'string' || value.length > MAX_TEXT) throw new InputError(`${where} must be text of at most ${MAX_TEXT} characters`);
  return value;
}

function texts<K extends string>(o: Record<string, unknown>, where: string, keys: readonly K[]): Partial<Record<K, string>> {
  const result: Partial<Record<K, string>> = {};
  for (const key of keys) if (o[key] !== undefined) result[key] = text(o[key], `${where}.${key}`);
  return result;
}
