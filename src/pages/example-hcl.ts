import type { DocAttribute, DocBlock, DocSchema } from '../protocol/provider-docs-shape';

/**
 * A generated example configuration block: the required arguments (and
 * blocks with a minimum count) with placeholder values of their type. The
 * values are shown as HCL text, escaped by the page like everything else.
 */
export function exampleBlock(kind: 'resource' | 'data' | 'provider', typeName: string, schema: DocSchema): string {
  const header = kind === 'provider' ? `provider "${typeName}" {` : `${kind} "${typeName}" "example" {`;
  return `${header}\n${body(schema.attributes, schema.blocks, '  ')}}\n`;
}

function body(attributes: readonly DocAttribute[], blocks: readonly DocBlock[], indent: string): string {
  let out = '';
  const required = attributes.filter((a) => a.mode === 'required');
  const width = Math.max(0, ...required.map((a) => a.name.length));
  for (const a of required) out += `${indent}${a.name.padEnd(width)} = ${placeholder(a, indent)}\n`;
  for (const b of blocks) {
    if ((b.minItems ?? 0) < 1) continue;
    out += `${indent}${b.name} {\n${body(b.attributes, b.blocks, indent + '  ')}${indent}}\n`;
  }
  return out;
}

function placeholder(attribute: DocAttribute, indent: string): string {
  if (attribute.nested) {
    const inner = `{\n${body(attribute.nested.attributes, [], indent + '    ')}${indent}  }`;
    const object = `{\n${body(attribute.nested.attributes, [], indent + '  ')}${indent}}`;
    if (attribute.nested.nesting === 'single') return object;
    if (attribute.nested.nesting === 'map') return `{\n${indent}  key = ${inner}\n${indent}}`;
    return `[\n${indent}  ${inner},\n${indent}]`;
  }
  return valueOf(attribute.type, attribute.name);
}

/** A placeholder value for a Terraform type expression. */
export function valueOf(type: string, name: string): string {
  if (type === 'string') return `"${name.replace(/_/g, '-')}"`;
  if (type === 'number') return '1';
  if (type === 'bool') return 'true';
  const collection = /^(list|set)\((.*)\)$/.exec(type);
  if (collection) return `[${valueOf(collection[2]!, name)}]`;
  const map = /^map\((.*)\)$/.exec(type);
  if (map) return `{ key = ${valueOf(map[1]!, name)} }`;
  if (type.startsWith('object(')) return '{}';
  return 'null';
}
