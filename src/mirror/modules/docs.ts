import { renderReadme } from '../../http/readme';
import type { ModuleDocs, ModuleInput, ModuleInterface, ModuleOutput, ModuleProviderRequirement } from '../../store/modules/types';

/**
 * Docs of a proxied module, read in the Worker from the package's files.
 * publish-module uses HashiCorp's HCL parser (WASM, too large for a Worker
 * bundle); here a small scanner
 * reads the same blocks — `variable`, `output`, `terraform {
 * required_providers, required_version }` at the top level of each .tf
 * file of the root and of modules/NAME/ — with their simple attributes
 * (description, type, default, sensitive, nullable, validation blocks), and
 * the README is rendered by src/http/readme.ts (the one renderer). Whatever the scanner
 * cannot read is left out, never guessed; the package itself is unchanged.
 */

export function proxiedModuleDocs(texts: ReadonlyMap<string, string>): ModuleDocs {
  const byDir = new Map<string, string[]>();
  for (const [path, text] of texts) {
    const match = /^(?:(modules\/[^/]+)\/)?[^/]+\.(?:tf|tofu)$/.exec(path);
    if (!match) continue;
    const dir = match[1] ?? '';
    byDir.set(dir, [...(byDir.get(dir) ?? []), text]);
  }
  const root = interfaceOf(byDir.get('') ?? []);
  const submodules = [...byDir.keys()]
    .filter((d) => d !== '')
    .sort()
    .map((path) => ({ path, ...interfaceOf(byDir.get(path)!) }));
  const readme = texts.get('README.md');
  return { ...root, submodules, readmeHtml: readme === undefined ? null : renderReadme(readme) };
}

interface Block {
  type: string;
  labels: string[];
  /** Top-level attributes: name → expression text. */
  attributes: Map<string, string>;
  blocks: Block[];
}

function interfaceOf(files: readonly string[]): ModuleInterface {
  const inputs: ModuleInput[] = [];
  const outputs: ModuleOutput[] = [];
  const providers: ModuleProviderRequirement[] = [];
  const required: string[] = [];
  for (const text of files) {
    let blocks: Block[];
    try {
      blocks = parseBody(text, { at: 0 }, false);
    } catch {
      continue; // unreadable here: left out of the docs
    }
    for (const block of blocks) {
      if (block.type === 'variable' && block.labels[0]) {
        const a = block.attributes;
        inputs.push({
          name: block.labels[0],
          type: a.get('type') ?? null,
          default: a.get('default') ?? null,
          description: stringValue(a.get('description')),
          sensitive: a.get('sensitive') === 'true',
          nullable: a.get('nullable') !== 'false',
          required: !a.has('default'),
          validations: block.blocks.filter((b) => b.type === 'validation').length,
        });
      } else if (block.type === 'output' && block.labels[0]) {
        outputs.push({
          name: block.labels[0],
          description: stringValue(block.attributes.get('description')),
          sensitive: block.attributes.get('sensitive') === 'true',
        });
      } else if (block.type === 'terraform') {
        const version = stringValue(block.attributes.get('required_version'));
        if (version) required.push(version);
        for (const rp of block.blocks.filter((b) => b.type === 'required_providers')) {
          for (const [name, value] of rp.attributes) {
            const object = /^\{([\s\S]*)\}$/.exec(value.trim());
            const field = (key: string) => stringValue(new RegExp(`\\b${key}\\s*=\\s*("(?:[^"\\\\]|\\\\.)*")`).exec(object?.[1] ?? '')?.[1]);
            providers.push(object ? { name, source: field('source'), version: field('version') } : { name, source: null, version: stringValue(value) });
          }
        }
      }
    }
  }
  const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return {
    inputs: inputs.sort(byName),
    outputs: outputs.sort(byName),
    providers: providers.sort(byName),
    requiredVersion: required.length ? required.join(', ') : null,
  };
}

function stringValue(expression: string | undefined): string | null {
  if (expression === undefined) return null;
  const match = /^"((?:[^"\\]|\\.)*)"$/.exec(expression.trim());
  if (!match) return null;
  return match[1]!.replace(/\\(["\\nt])/g, (_, c: string) => ({ n: '\n', t: '\t' })[c] ?? c);
}

/** Parses a body (the file, or inside braces when `nested`) into its blocks, attributes skipped over balanced. */
function parseBody(text: string, pos: { at: number }, nested: boolean, attributes?: Map<string, string>): Block[] {
  const blocks: Block[] = [];
  for (;;) {
    skipSpace(text, pos);
    if (pos.at >= text.length) {
      if (nested) throw new Error('unclosed block');
      return blocks;
    }
    if (text[pos.at] === '}') {
      if (!nested) throw new Error('stray }');
      pos.at++;
      return blocks;
    }
    const ident = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(text.slice(pos.at, pos.at + 256))?.[0];
    if (!ident) throw new Error(`unexpected ${text[pos.at]}`);
    pos.at += ident.length;
    skipSpace(text, pos, true);
    if (text[pos.at] === '=' && text[pos.at + 1] !== '=') {
      pos.at++;
      const start = pos.at;
      skipExpression(text, pos);
      attributes?.set(ident, text.slice(start, pos.at).trim());
      continue;
    }
    const labels: string[] = [];
    for (;;) {
      skipSpace(text, pos, true);
      if (text[pos.at] === '"') {
        const start = pos.at;
        skipString(text, pos);
        labels.push(stringValue(text.slice(start, pos.at)) ?? '');
      } else if (text[pos.at] === '{') break;
      else {
        const label = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(text.slice(pos.at, pos.at + 256))?.[0];
        if (!label) throw new Error('bad block header');
        labels.push(label);
        pos.at += label.length;
      }
    }
    pos.at++;
    const own = new Map<string, string>();
    const inner = parseBody(text, pos, true, own);
    blocks.push({ type: ident, labels, attributes: own, blocks: inner });
  }
}

function skipSpace(text: string, pos: { at: number }, sameLine = false): void {
  while (pos.at < text.length) {
    const c = text[pos.at]!;
    if (c === ' ' || c === '\t' || c === '\r' || (!sameLine && c === '\n')) pos.at++;
    else if (c === '#' || (c === '/' && text[pos.at + 1] === '/')) {
      while (pos.at < text.length && text[pos.at] !== '\n') pos.at++;
    } else if (c === '/' && text[pos.at + 1] === '*') {
      const end = text.indexOf('*/', pos.at + 2);
      pos.at = end === -1 ? text.length : end + 2;
    } else return;
  }
}

function skipString(text: string, pos: { at: number }): void {
  pos.at++;
  while (pos.at < text.length && text[pos.at] !== '"') {
    if (text[pos.at] === '\\') pos.at++;
    else if (text[pos.at] === '$' && text[pos.at + 1] === '{') {
      pos.at += 2;
      skipBalanced(text, pos, '}');
      continue;
    }
    pos.at++;
  }
  pos.at++;
}

function skipBalanced(text: string, pos: { at: number }, close: string): void {
  while (pos.at < text.length && text[pos.at] !== close) skipToken(text, pos);
  pos.at++;
}

function skipToken(text: string, pos: { at: number }): void {
  const c = text[pos.at]!;
  if (c === '"') skipString(text, pos);
  else if (c === '{') {
    pos.at++;
    skipBalanced(text, pos, '}');
  } else if (c === '[') {
    pos.at++;
    skipBalanced(text, pos, ']');
  } else if (c === '(') {
    pos.at++;
    skipBalanced(text, pos, ')');
  } else if (c === '<' && text[pos.at + 1] === '<') {
    const marker = /^<<-?([A-Za-z_]+)\n/.exec(text.slice(pos.at, pos.at + 100));
    if (!marker) {
      pos.at++;
      return;
    }
    const end = new RegExp(`\\n\\s*${marker[1]}\\s*(?:\\n|$)`).exec(text.slice(pos.at + marker[0].length - 1));
    pos.at = end ? pos.at + marker[0].length - 1 + end.index + end[0].length - 1 : text.length;
  } else if (c === '#' || (c === '/' && (text[pos.at + 1] === '/' || text[pos.at + 1] === '*'))) skipSpace(text, pos);
  else pos.at++;
}

/** Skips an attribute's expression: to the end of its line, brackets and strings balanced. */
function skipExpression(text: string, pos: { at: number }): void {
  skipSpace(text, pos, true);
  while (pos.at < text.length && text[pos.at] !== '\n' && text[pos.at] !== '}') {
    if (text[pos.at] === '#' || (text[pos.at] === '/' && text[pos.at + 1] === '/')) {
      while (pos.at < text.length && text[pos.at] !== '\n') pos.at++;
      return;
    }
    skipToken(text, pos);
  }
}
