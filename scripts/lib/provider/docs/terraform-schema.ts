import type { AttributeMode, DocAttribute, DocBlock, DocEntity, DocSchema, ProviderDocs } from '../../../../src/protocol/provider-docs-shape';
import { DocsProblems, isObject, optionalString } from './errors';

/**
 * Reads the output of `terraform providers schema -json` (format_version
 * 1.x) into the stored docs form: the entry of `provider_schemas` for the
 * provider being published (its address ends in /NAMESPACE/TYPE, or it is
 * the only one). Problems are reported with their JSON path.
 */

/** True when `value` looks like `terraform providers schema -json` output. */
export function isTerraformSchema(value: unknown): boolean {
  return isObject(value) && 'provider_schemas' in value;
}

export function fromTerraformSchema(value: unknown, file: string, namespace: string, providerType: string): ProviderDocs {
  const problems = new DocsProblems(file);
  const root = value as Record<string, unknown>;
  if (typeof root.format_version !== 'string' || !/^1\./.test(root.format_version)) {
    problems.add(
      '$.format_version',
      `${JSON.stringify(root.format_version)} is not supported; give the output of terraform providers schema -json (format 1.x)`,
    );
  }
  const schemas = isObject(root.provider_schemas) ? root.provider_schemas : {};
  const addresses = Object.keys(schemas);
  const address =
    addresses.find((a) => a.toLowerCase().endsWith(`/${namespace}/${providerType}`)) ??
    addresses.find((a) => a.toLowerCase().endsWith(`/${providerType}`)) ??
    (addresses.length === 1 ? addresses[0] : undefined);
  if (address === undefined) {
    problems.add(
      '$.provider_schemas',
      addresses.length === 0
        ? 'is empty; run terraform providers schema -json in a configuration that requires this provider'
        : `has no schema for …/${namespace}/${providerType} (it has ${addresses.join(', ')}); run it in a configuration that requires this provider`,
    );
    problems.throwIfAny();
  }
  const entry = schemas[address!];
  const base = `$.provider_schemas["${address}"]`;
  if (!isObject(entry)) {
    problems.add(base, 'must be an object with provider, resource_schemas and data_source_schemas');
    problems.throwIfAny();
  }
  const provider = entry as Record<string, unknown>;
  const providerSchema = isObject(provider.provider)
    ? blockSchema(provider.provider.block, `${base}.provider.block`, problems)
    : { attributes: [], blocks: [] };
  const entities = (key: string): DocEntity[] => {
    const map = provider[key];
    if (map === undefined) return [];
    if (!isObject(map)) {
      problems.add(`${base}.${key}`, 'must be an object of schemas by type name');
      return [];
    }
    return Object.entries(map)
      .map(([name, schema]) => ({
        name,
        schema: isObject(schema) ? blockSchema(schema.block, `${base}.${key}["${name}"].block`, problems) : { attributes: [], blocks: [] },
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
  };
  const docs: ProviderDocs = {
    source: 'terraform-schema',
    provider: providerType,
    providerSchema,
    resources: entities('resource_schemas'),
    dataSources: entities('data_source_schemas'),
  };
  problems.throwIfAny();
  return docs;
}

function blockSchema(value: unknown, path: string, problems: DocsProblems): DocSchema {
  if (value === undefined) return { attributes: [], blocks: [] };
  if (!isObject(value)) {
    problems.add(path, 'must be an object with attributes and block_types');
    return { attributes: [], blocks: [] };
  }
  const schema: DocSchema = {
    attributes: attributes(value.attributes, `${path}.attributes`, problems),
    blocks: blockTypes(value.block_types, `${path}.block_types`, problems),
  };
  const description = optionalString(value.description, `${path}.description`, problems);
  if (description) schema.description = description;
  if (value.deprecated === true) schema.deprecation = 'Deprecated.';
  return schema;
}

function attributes(value: unknown, path: string, problems: DocsProblems): DocAttribute[] {
  if (value === undefined) return [];
  if (!isObject(value)) {
    problems.add(path, 'must be an object of attributes by name');
    return [];
  }
  return Object.entries(value).map(([name, raw]) => {
    const at = `${path}.${name}`;
    const a = isObject(raw) ? raw : {};
    const mode: AttributeMode =
      a.required === true ? 'required' : a.optional === true && a.computed === true ? 'computed_optional' : a.computed === true ? 'computed' : 'optional';
    const attribute: DocAttribute = { name, type: 'unknown', mode };
    if (isObject(a.nested_type)) {
      const nesting = String(a.nested_type.nesting_mode ?? 'single') as 'single' | 'list' | 'set' | 'map';
      attribute.nested = { nesting, attributes: attributes(a.nested_type.attributes, `${at}.nested_type.attributes`, problems) };
      attribute.type = nesting === 'single' ? 'object' : `${nesting} of objects`;
    } else if (a.type !== undefined) {
      attribute.type = ctyType(a.type, `${at}.type`, problems);
    } else {
      problems.add(at, 'has neither "type" nor "nested_type"');
    }
    const description = optionalString(a.description, `${at}.description`, problems);
    if (description) attribute.description = description;
    if (a.sensitive === true) attribute.sensitive = true;
    if (a.deprecated === true) attribute.deprecation = 'Deprecated.';
    return attribute;
  });
}

/** A cty type in its JSON form ("string", ["list","string"], ["object",{…}]) as a Terraform type expression. */
function ctyType(value: unknown, path: string, problems: DocsProblems): string {
  if (typeof value === 'string' && ['string', 'number', 'bool', 'dynamic'].includes(value)) return value === 'dynamic' ? 'any' : value;
  if (Array.isArray(value) && typeof value[0] === 'string') {
    const [kind, inner] = value as [string, unknown];
    if (['list', 'set', 'map'].includes(kind)) return `${kind}(${ctyType(inner, `${path}[1]`, problems)})`;
    if (kind === 'object' && isObject(inner))
      return `object({${Object.entries(inner)
        .map(([k, t]) => `${k} = ${ctyType(t, `${path}[1].${k}`, problems)}`)
        .join(', ')}})`;
    if (kind === 'tuple' && Array.isArray(inner)) return `tuple([${inner.map((t, i) => ctyType(t, `${path}[1][${i}]`, problems)).join(', ')}])`;
  }
  problems.add(path, `${JSON.stringify(value)?.slice(0, 60)} is not a Terraform type`);
  return 'unknown';
}

function blockTypes(value: unknown, path: string, problems: DocsProblems): DocBlock[] {
  if (value === undefined) return [];
  if (!isObject(value)) {
    problems.add(path, 'must be an object of block types by name');
    return [];
  }
  return Object.entries(value).map(([name, raw]) => {
    const at = `${path}.${name}`;
    const b = isObject(raw) ? raw : {};
    const inner = blockSchema(b.block, `${at}.block`, problems);
    const block: DocBlock = {
      name,
      nesting: (['single', 'list', 'set', 'map', 'group'].includes(String(b.nesting_mode)) ? b.nesting_mode : 'list') as DocBlock['nesting'],
      attributes: inner.attributes,
      blocks: inner.blocks,
    };
    if (inner.description) block.description = inner.description;
    if (inner.deprecation) block.deprecation = inner.deprecation;
    if (typeof b.min_items === 'number' && b.min_items > 0) block.minItems = b.min_items;
    if (typeof b.max_items === 'number' && b.max_items > 0) block.maxItems = b.max_items;
    return block;
  });
}
