import type { AttributeMode, DocAttribute, DocBlock, DocEntity, DocSchema, ProviderDocs } from '../../../../src/protocol/provider-docs-shape';
import { DocsProblems, isObject, LOWER_IDENTIFIER, optionalString } from './errors';

/**
 * Reads a Provider Code Specification (version 0.1; see
 * ../shared/reference/provider-code-specification.md) into the stored docs
 * form. Validates everything first and reports every problem with its JSON
 * path and the fix: an unsupported spec version, a name that is not a
 * lower-case Terraform identifier, an unknown or missing attribute type,
 * a missing or wrong computed_optional_required. Resource and data source
 * names become full type names (PROVIDER_NAME), as the framework generates.
 */

const ATTRIBUTE_TYPES = [
  'bool',
  'float64',
  'int64',
  'list',
  'list_nested',
  'map',
  'map_nested',
  'number',
  'object',
  'set',
  'set_nested',
  'single_nested',
  'string',
] as const;
const ELEMENT_TYPES = ['bool', 'float64', 'int64', 'list', 'map', 'number', 'object', 'set', 'string'] as const;
const BLOCK_TYPES = ['list_nested', 'set_nested', 'single_nested'] as const;
const MODES = ['computed', 'computed_optional', 'optional', 'required'] as const;
const PROVIDER_MODES = ['optional', 'required'] as const;

type Kind = 'provider' | 'resource' | 'datasource';

/** True when `value` looks like a Provider Code Specification (has `provider` and `version`). */
export function isCodeSpec(value: unknown): boolean {
  return isObject(value) && 'provider' in value && !('provider_schemas' in value);
}

/** Converts a parsed spec; throws InputError listing every problem. `providerType` is the type being published. */
export function fromCodeSpec(value: unknown, file: string, providerType: string): ProviderDocs {
  const problems = new DocsProblems(file);
  if (!isObject(value)) {
    problems.add('$', 'must be a JSON object with "version", "provider", "resources" and "datasources"');
    problems.throwIfAny();
  }
  const spec = value as Record<string, unknown>;
  if (typeof spec.version !== 'string' || !/^0\.1(\.[0-9]+)?$/.test(spec.version)) {
    problems.add(
      '$.version',
      `spec version ${JSON.stringify(spec.version)} is not supported; write "0.1" (this registry reads version 0.1 of the Provider Code Specification)`,
    );
  }
  const { providerName, providerSchema } = providerOf(spec.provider, providerType, problems);
  const resources = entitiesOf(spec.resources, 'resources', 'resource', providerName, problems);
  const dataSources = entitiesOf(spec.datasources, 'datasources', 'datasource', providerName, problems);
  problems.throwIfAny();
  const byName = (a: DocEntity, b: DocEntity) => a.name.localeCompare(b.name);
  return { source: 'provider-code-spec', provider: providerName, providerSchema, resources: resources.sort(byName), dataSources: dataSources.sort(byName) };
}

/** "provider": its name (which must be the type being published) and schema; problems are added, the type kept. */
function providerOf(provider: unknown, providerType: string, problems: DocsProblems): { providerName: string; providerSchema: DocSchema } {
  let providerName = providerType;
  let providerSchema: DocSchema = { attributes: [], blocks: [] };
  if (!isObject(provider)) {
    problems.add('$.provider', 'is required: an object with "name" (the provider type) and optional "schema"');
  } else {
    const name = provider.name;
    if (typeof name !== 'string' || !LOWER_IDENTIFIER.test(name)) {
      problems.add('$.provider.name', `${JSON.stringify(name)} is not a lower-case Terraform identifier; use the provider type, "${providerType}"`);
    } else if (name !== providerType) {
      problems.add(
        '$.provider.name',
        `is "${name}" but the provider being published is "${providerType}"; use the spec of this provider or set "name": "${providerType}"`,
      );
    } else {
      providerName = name;
    }
    if (provider.schema !== undefined) providerSchema = schemaOf(provider.schema, '$.provider.schema', 'provider', problems, false);
    const description = optionalString(provider.description, '$.provider.description', problems);
    if (description) providerSchema.description = description;
  }
  return { providerName, providerSchema };
}

/** "resources" or "datasources": each a unique lower-case identifier with a schema, named PROVIDER_NAME; problems are added. */
function entitiesOf(list: unknown, key: 'resources' | 'datasources', kind: Kind, providerName: string, problems: DocsProblems): DocEntity[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) {
    problems.add(`$.${key}`, 'must be an array');
    return [];
  }
  const seen = new Set<string>();
  return list.map((item, i) => {
    const path = `$.${key}[${i}]`;
    if (!isObject(item)) {
      problems.add(path, 'must be an object with "name" and "schema"');
      return { name: '', schema: { attributes: [], blocks: [] } };
    }
    if (typeof item.name !== 'string' || !LOWER_IDENTIFIER.test(item.name)) {
      problems.add(
        `${path}.name`,
        `${JSON.stringify(item.name)} is not a lower-case Terraform identifier (letters, digits, "_" and "-", starting with a letter or "_")`,
      );
    } else if (seen.has(item.name)) {
      problems.add(`${path}.name`, `"${item.name}" appears twice; names must be unique`);
    }
    if (typeof item.name === 'string') seen.add(item.name);
    const schema = schemaOf(item.schema, `${path}.schema`, kind, problems, true);
    // Not in the specification (0.1 has no description for a resource): accepted so a page can say what it is.
    const description = optionalString(item.description, `${path}.description`, problems);
    if (description) schema.description = description;
    return { name: `${providerName}_${String(item.name)}`, schema };
  });
}

function schemaOf(value: unknown, path: string, kind: Kind, problems: DocsProblems, required: boolean): DocSchema {
  if (!isObject(value)) {
    if (required || value !== undefined) problems.add(path, 'must be an object with "attributes" and/or "blocks"');
    return { attributes: [], blocks: [] };
  }
  if (required && value.attributes === undefined && value.blocks === undefined) {
    problems.add(path, 'needs at least one of "attributes" or "blocks"');
  }
  return {
    attributes: attributesOf(value.attributes, `${path}.attributes`, kind, problems),
    blocks: blocksOf(value.blocks, `${path}.blocks`, kind, problems),
  };
}

function names<T>(value: unknown, path: string, problems: DocsProblems, each: (item: Record<string, unknown>, path: string) => T): T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    problems.add(path, 'must be an array');
    return [];
  }
  const seen = new Set<string>();
  const out: T[] = [];
  value.forEach((item, i) => {
    const itemPath = `${path}[${i}]`;
    if (!isObject(item)) return problems.add(itemPath, 'must be an object with "name" and one type');
    if (typeof item.name !== 'string' || !LOWER_IDENTIFIER.test(item.name)) {
      problems.add(
        `${itemPath}.name`,
        `${JSON.stringify(item.name)} is not a lower-case Terraform identifier (letters, digits, "_" and "-", starting with a letter or "_")`,
      );
    } else if (seen.has(item.name)) {
      problems.add(`${itemPath}.name`, `"${item.name}" appears twice; names must be unique within a schema`);
    } else {
      seen.add(item.name);
    }
    out.push(each(item, itemPath));
  });
  return out;
}

function typeKey(item: Record<string, unknown>, allowed: readonly string[], path: string, problems: DocsProblems, what: string): string | null {
  const keys = Object.keys(item).filter((k) => k !== 'name');
  const types = keys.filter((k) => allowed.includes(k));
  const unknown = keys.filter((k) => !allowed.includes(k));
  if (types.length === 1 && unknown.length === 0) return types[0]!;
  if (unknown.length > 0 && types.length === 0) {
    problems.add(path, `unknown ${what} type "${unknown[0]}"; use exactly one of ${allowed.join(', ')}`);
  } else if (types.length === 0) {
    problems.add(path, `has no type; add exactly one of ${allowed.join(', ')}`);
  } else if (types.length > 1) {
    problems.add(path, `has ${types.length} types (${types.join(', ')}); keep exactly one`);
  } else {
    problems.add(path, `unexpected property "${unknown[0]}" next to "${types[0]}"; a ${what} has "name" and exactly one type`);
  }
  return null;
}

function attributesOf(value: unknown, path: string, kind: Kind, problems: DocsProblems): DocAttribute[] {
  return names(value, path, problems, (item, itemPath) => {
    const key = typeKey(item, ATTRIBUTE_TYPES, itemPath, problems, 'attribute');
    const name = String(item.name);
    if (key === null) return { name, type: 'unknown', mode: 'optional' as AttributeMode };
    const def = item[key];
    const defPath = `${itemPath}.${key}`;
    if (!isObject(def)) {
      problems.add(defPath, 'must be an object');
      return { name, type: 'unknown', mode: 'optional' as AttributeMode };
    }
    const modeField = kind === 'provider' ? 'optional_required' : 'computed_optional_required';
    const modes: readonly string[] = kind === 'provider' ? PROVIDER_MODES : MODES;
    const mode = def[modeField];
    if (typeof mode !== 'string' || !modes.includes(mode)) {
      problems.add(
        `${defPath}.${modeField}`,
        `${mode === undefined ? 'is required' : `${JSON.stringify(mode)} is not allowed`}; use one of ${modes.join(', ')}`,
      );
    }
    const attribute: DocAttribute = { name, type: 'unknown', mode: (modes.includes(String(mode)) ? mode : 'optional') as AttributeMode };
    const description = optionalString(def.description, `${defPath}.description`, problems);
    if (description) attribute.description = description;
    const deprecation = optionalString(def.deprecation_message, `${defPath}.deprecation_message`, problems);
    if (deprecation) attribute.deprecation = deprecation;
    if (def.sensitive !== undefined && typeof def.sensitive !== 'boolean') problems.add(`${defPath}.sensitive`, 'must be true or false');
    if (def.sensitive === true) attribute.sensitive = true;
    if (key.endsWith('_nested')) {
      const nesting = key === 'single_nested' ? 'single' : (key.slice(0, -'_nested'.length) as 'list' | 'set' | 'map');
      let attrs: unknown;
      if (nesting === 'single') attrs = def.attributes;
      else if (!isObject(def.nested_object)) problems.add(`${defPath}.nested_object`, `is required for ${key}: an object with "attributes"`);
      else attrs = def.nested_object.attributes;
      const nestedPath = nesting === 'single' ? `${defPath}.attributes` : `${defPath}.nested_object.attributes`;
      attribute.nested = { nesting, attributes: attributesOf(attrs, nestedPath, kind, problems) };
      attribute.type = nesting === 'single' ? 'object' : `${nesting} of objects`;
    } else {
      attribute.type = typeExpression(key, def, defPath, problems);
    }
    return attribute;
  });
}

/** The Terraform type expression of a (non-nested) attribute or element type. */
function typeExpression(key: string, def: Record<string, unknown>, path: string, problems: DocsProblems): string {
  switch (key) {
    case 'bool':
    case 'string':
    case 'number':
      return key;
    case 'float64':
    case 'int64':
      return 'number';
    case 'list':
    case 'set':
    case 'map': {
      if (!isObject(def.element_type)) {
        problems.add(`${path}.element_type`, `is required for ${key}: e.g. {"string": {}}`);
        return `${key}(unknown)`;
      }
      return `${key}(${elementType(def.element_type, `${path}.element_type`, problems)})`;
    }
    case 'object': {
      const types = def.attribute_types;
      if (!Array.isArray(types)) {
        problems.add(`${path}.attribute_types`, 'is required for object: an array of {"name": …, "TYPE": {}}');
        return 'object({})';
      }
      return objectType(types, `${path}.attribute_types`, problems);
    }
    default:
      return 'unknown';
  }
}

function elementType(value: Record<string, unknown>, path: string, problems: DocsProblems): string {
  const keys = Object.keys(value);
  const types = keys.filter((k) => (ELEMENT_TYPES as readonly string[]).includes(k));
  if (types.length !== 1 || keys.length !== 1) {
    problems.add(
      path,
      keys.length === 1 ? `unknown element type "${keys[0]}"; use one of ${ELEMENT_TYPES.join(', ')}` : `needs exactly one of ${ELEMENT_TYPES.join(', ')}`,
    );
    return 'unknown';
  }
  const key = types[0]!;
  const def = value[key];
  if (key === 'object' && Array.isArray(def)) return objectType(def, `${path}.object`, problems);
  return typeExpression(key, isObject(def) ? def : {}, `${path}.${key}`, problems);
}

function objectType(types: unknown[], path: string, problems: DocsProblems): string {
  const fields = names(types, path, problems, (item, itemPath) => {
    const key = typeKey(item, ELEMENT_TYPES, itemPath, problems, 'object attribute');
    if (key === null) return `${String(item.name)} = unknown`;
    const def = item[key];
    const type =
      key === 'object' && Array.isArray(def)
        ? objectType(def, `${itemPath}.object`, problems)
        : typeExpression(key, isObject(def) ? def : {}, `${itemPath}.${key}`, problems);
    return `${String(item.name)} = ${type}`;
  });
  return `object({${fields.join(', ')}})`;
}

function blocksOf(value: unknown, path: string, kind: Kind, problems: DocsProblems): DocBlock[] {
  return names(value, path, problems, (item, itemPath) => {
    const key = typeKey(item, BLOCK_TYPES, itemPath, problems, 'block');
    const name = String(item.name);
    const block: DocBlock = { name, nesting: 'list', attributes: [], blocks: [] };
    if (key === null) return block;
    const def = item[key];
    const defPath = `${itemPath}.${key}`;
    if (!isObject(def)) {
      problems.add(defPath, 'must be an object');
      return block;
    }
    block.nesting = key === 'single_nested' ? 'single' : key === 'set_nested' ? 'set' : 'list';
    const description = optionalString(def.description, `${defPath}.description`, problems);
    if (description) block.description = description;
    const deprecation = optionalString(def.deprecation_message, `${defPath}.deprecation_message`, problems);
    if (deprecation) block.deprecation = deprecation;
    const inner = block.nesting === 'single' ? def : def.nested_object;
    const innerPath = block.nesting === 'single' ? defPath : `${defPath}.nested_object`;
    if (!isObject(inner)) {
      problems.add(innerPath, `is required for ${key}: an object with "attributes" and/or "blocks"`);
      return block;
    }
    block.attributes = attributesOf(inner.attributes, `${innerPath}.attributes`, kind, problems);
    block.blocks = blocksOf(inner.blocks, `${innerPath}.blocks`, kind, problems);
    return block;
  });
}
