import { renderReadme } from '../../http/readme';
import { InputError } from '../../protocol/errors';
import type { ModuleArchiveFormat } from '../../protocol/modules-v1';
import type { ModuleManifestBody } from '../../protocol/publish-api';
import type { ModuleDocs, ModuleInterface } from '../../store/modules/types';

/**
 * The manifest a client sends to start a module publish
 * (`POST /v1/publish/modules/NS/NAME/SYSTEM/VERSION`): the wire type
 * ModuleManifestBody (src/protocol/publish-api.ts), checked field by field.
 *
 * Docs are extracted by the client (the Worker parses no HCL) and checked
 * here for shape and size; they are plain data, escaped on the pages. The
 * README is NOT taken as HTML from a client: it is sent as Markdown text and
 * rendered here by the one README renderer (src/http/readme.ts), as
 * publish-module and the module proxy render it, so an API publisher cannot
 * put markup of its own on the pages. (Versions published before kept their
 * stored `<pre>` text.)
 */

export const DEFAULT_MAX_MODULE_BYTES = 100 * 1000 * 1000;
const MAX_DOCS_BYTES = 1024 * 1024;
const HEX64 = /^[0-9a-f]{64}$/;

export interface ModuleManifest {
  format: ModuleArchiveFormat;
  size: number;
  sha256: string;
  docs: ModuleDocs;
  dryRun: boolean;
}

export function parseModuleManifest(body: unknown, maxBytes = DEFAULT_MAX_MODULE_BYTES): ModuleManifest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new InputError('the manifest must be a JSON object with "format", "size", "sha256" and "docs"');
  const m = body as { [K in keyof ModuleManifestBody]?: unknown };
  if (m.format !== 'tar.gz' && m.format !== 'zip') throw new InputError('"format" must be "tar.gz" or "zip"');
  if (!Number.isSafeInteger(m.size) || (m.size as number) <= 0) throw new InputError('"size" must be the package\'s size in bytes');
  if ((m.size as number) > maxBytes) throw new InputError(`the package is ${m.size} bytes, over the size limit of ${maxBytes}`, 413);
  if (typeof m.sha256 !== 'string' || !HEX64.test(m.sha256)) throw new InputError('"sha256" must be the package\'s SHA-256 in lower-case hex');
  if (JSON.stringify(m.docs ?? null).length > MAX_DOCS_BYTES) throw new InputError(`"docs" is over ${MAX_DOCS_BYTES} bytes`, 413);
  if (m.readme !== undefined && m.readme !== null && (typeof m.readme !== 'string' || m.readme.length > 512 * 1024))
    throw new InputError('"readme" must be the README text (at most 512 KB) or null');
  if (m.dry_run !== undefined && typeof m.dry_run !== 'boolean') throw new InputError('"dry_run" must be true or false');
  const root = moduleInterface(m.docs, 'docs');
  const submodules = (m.docs as { submodules?: unknown }).submodules ?? [];
  if (!Array.isArray(submodules) || submodules.length > 200) throw new InputError('docs.submodules must be a list (at most 200)');
  const docs: ModuleDocs = {
    ...root,
    submodules: submodules.map((s, i) => {
      const path = (s as { path?: unknown })?.path;
      if (typeof path !== 'string' || !/^[A-Za-z0-9._/-]{1,200}$/.test(path) || path.split('/').includes('..'))
        throw new InputError(`docs.submodules[${i}].path must be a relative path like modules/NAME`);
      return { path, ...moduleInterface(s, `docs.submodules[${i}]`) };
    }),
    readmeHtml: typeof m.readme === 'string' && m.readme.trim() !== '' ? renderReadme(m.readme) : null,
  };
  return { format: m.format, size: m.size as number, sha256: m.sha256, docs, dryRun: m.dry_run === true };
}

const str = (v: unknown, where: string, max = 10_000): string => {
  if (typeof v !== 'string' || v.length > max) throw new InputError(`${where} must be a string (at most ${max} characters)`);
  return v;
};
const strOrNull = (v: unknown, where: string): string | null => (v === null || v === undefined ? null : str(v, where));
const bool = (v: unknown, where: string): boolean => {
  if (typeof v !== 'boolean') throw new InputError(`${where} must be true or false`);
  return v;
};
const list = (v: unknown, where: string): unknown[] => {
  if (!Array.isArray(v) || v.length > 1000) throw new InputError(`${where} must be a list (at most 1,000)`);
  return v;
};

function moduleInterface(value: unknown, where: string): ModuleInterface {
  if (typeof value !== 'object' || value === null) throw new InputError(`${where} must be an object with inputs, outputs, providers and requiredVersion`);
  const d = value as Record<string, unknown>;
  return {
    inputs: list(d.inputs, `${where}.inputs`).map((raw, i) => {
      const w = `${where}.inputs[${i}]`;
      const x = (raw ?? {}) as Record<string, unknown>;
      return {
        name: str(x.name, `${w}.name`, 200),
        type: strOrNull(x.type, `${w}.type`),
        default: strOrNull(x.default, `${w}.default`),
        description: strOrNull(x.description, `${w}.description`),
        sensitive: bool(x.sensitive, `${w}.sensitive`),
        nullable: bool(x.nullable, `${w}.nullable`),
        required: bool(x.required, `${w}.required`),
        validations: Number.isSafeInteger(x.validations) ? (x.validations as number) : 0,
      };
    }),
    outputs: list(d.outputs, `${where}.outputs`).map((raw, i) => {
      const w = `${where}.outputs[${i}]`;
      const x = (raw ?? {}) as Record<string, unknown>;
      return { name: str(x.name, `${w}.name`, 200), description: strOrNull(x.description, `${w}.description`), sensitive: bool(x.sensitive, `${w}.sensitive`) };
    }),
    providers: list(d.providers, `${where}.providers`).map((raw, i) => {
      const w = `${where}.providers[${i}]`;
      const x = (raw ?? {}) as Record<string, unknown>;
      return { name: str(x.name, `${w}.name`, 200), source: strOrNull(x.source, `${w}.source`), version: strOrNull(x.version, `${w}.version`) };
    }),
    requiredVersion: strOrNull(d.requiredVersion, `${where}.requiredVersion`),
  };
}
