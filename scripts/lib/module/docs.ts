import { createRequire } from 'node:module';
import { InputError } from '../../../src/protocol/errors';
import { renderReadme } from '../../../src/http/readme';
import type { ModuleDocs, ModuleInput, ModuleInterface, ModuleOutput, ModuleProviderRequirement, ModuleSubmodule } from '../../../src/store/modules/types';

/**
 * Module docs, extracted at publish time from the package's own files:
 * HashiCorp's HCL parser (hcl2json, compiled to WASM) reads every .tf/.tofu
 * file of the root and of each modules/NAME/ directory; README.md is
 * rendered by the one README renderer (src/http/readme.ts), so pages can
 * show it as HTML. .tf.json files are not read (their blocks are not in the docs).
 */

type Hcl = Record<string, unknown>;

// Loaded untyped on purpose: its declaration file pulls in the DOM library,
// which changes fetch/BodyInit types for the whole Node type-check.
const { parse } = createRequire(import.meta.url)('@cdktf/hcl2json') as { parse(filename: string, contents: string): Promise<unknown> };

/**
 * Builds the docs from `files` (package path → text; other paths ignored).
 * Throws InputError naming the file when one does not parse as HCL.
 */
export async function extractModuleDocs(files: ReadonlyMap<string, string>): Promise<ModuleDocs> {
  const byDirectory = new Map<string, [string, string][]>();
  for (const [path, text] of files) {
    const match = /^(?:(modules\/[^/]+)\/)?[^/]+\.(?:tf|tofu)$/.exec(path);
    if (!match) continue;
    const dir = match[1] ?? '';
    byDirectory.set(dir, [...(byDirectory.get(dir) ?? []), [path, text]]);
  }
  const root = await interfaceOf(byDirectory.get('') ?? []);
  const submodules: ModuleSubmodule[] = [];
  for (const dir of [...byDirectory.keys()].filter((d) => d !== '').sort()) {
    submodules.push({ path: dir, ...(await interfaceOf(byDirectory.get(dir)!)) });
  }
  const readme = files.get('README.md');
  return { ...root, submodules, readmeHtml: readme === undefined ? null : renderReadme(readme) };
}

async function interfaceOf(files: [string, string][]): Promise<ModuleInterface> {
  const inputs: ModuleInput[] = [];
  const outputs: ModuleOutput[] = [];
  const providers = new Map<string, ModuleProviderRequirement>();
  const versions: string[] = [];
  for (const [path, text] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    let hcl: Hcl;
    try {
      hcl = (await parse(path, text)) as Hcl;
    } catch (error) {
      throw new InputError(`${path} is not valid HCL: ${(error as Error).message.replace(/^parse config: /, '')}`);
    }
    for (const [name, blocks] of Object.entries((hcl.variable ?? {}) as Record<string, Hcl[]>)) {
      const v = blocks[0] ?? {};
      const hasDefault = Object.hasOwn(v, 'default');
      inputs.push({
        name,
        type: typeof v.type === 'string' ? expression(v.type) : null,
        default: hasDefault ? hclValue(v.default) : null,
        description: typeof v.description === 'string' ? v.description : null,
        sensitive: v.sensitive === true,
        nullable: v.nullable !== false,
        required: !hasDefault,
        validations: Array.isArray(v.validation) ? v.validation.length : 0,
      });
    }
    for (const [name, blocks] of Object.entries((hcl.output ?? {}) as Record<string, Hcl[]>)) {
      const o = blocks[0] ?? {};
      outputs.push({ name, description: typeof o.description === 'string' ? o.description : null, sensitive: o.sensitive === true });
    }
    for (const block of (hcl.terraform ?? []) as Hcl[]) {
      if (typeof block.required_version === 'string') versions.push(block.required_version);
      for (const group of (block.required_providers ?? []) as Record<string, unknown>[]) {
        for (const [name, value] of Object.entries(group)) {
          if (typeof value === 'string') providers.set(name, { name, source: null, version: value });
          else if (value && typeof value === 'object') {
            const req = value as Hcl;
            providers.set(name, {
              name,
              source: typeof req.source === 'string' ? req.source : null,
              version: typeof req.version === 'string' ? req.version : null,
            });
          }
        }
      }
    }
  }
  const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return {
    inputs: inputs.sort(byName),
    outputs: outputs.sort(byName),
    providers: [...providers.values()].sort(byName),
    requiredVersion: versions.length === 0 ? null : versions.join(', '),
  };
}

/** "${list(string)}" (how hcl2json writes an expression) → "list(string)". */
function expression(text: string): string {
  return text.startsWith('${') && text.endsWith('}') ? text.slice(2, -1) : text;
}

/** A default value as HCL-like text: JSON literals, with expressions unwrapped. */
function hclValue(value: unknown): string {
  if (typeof value === 'string' && value.startsWith('${') && value.endsWith('}')) return expression(value);
  return JSON.stringify(value);
}
