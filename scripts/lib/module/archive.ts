import { readFileSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { inflateRaw } from 'node:zlib';
import { InputError } from '../../../src/protocol/errors';
import type { ModuleArchiveFormat } from '../../../src/protocol/modules-v1';
import { isDocFile } from '../../../src/protocol/module-package';
import { checkModulePackage, type ModulePackageSource } from '../../../src/protocol/module-package-check';
import { zipInMemory } from '../../../src/protocol/zip-reader';
import { formatMB } from './pack';

/**
 * Validating a supplied module package (.tar.gz/.tgz or .zip) before it is
 * published as is, by the rules of src/protocol/module-package.ts (relative
 * names inside the package, links inside it, a .tf or .tofu file at the
 * root); only files, directories and links may appear. The files the docs are extracted from
 * (root and modules/NAME/ *.tf and *.tofu, the root README.md) are returned.
 */

export interface SuppliedPackage {
  bytes: Uint8Array;
  format: ModuleArchiveFormat;
  /** Names of the regular files, normalised (no "./"). */
  files: string[];
  /** Contents of the files docs are extracted from, by normalised path. */
  docFiles: Map<string, string>;
}

/** The archive format a file name says, or null. */
export function archiveFormatOf(path: string): ModuleArchiveFormat | null {
  if (/\.(tar\.gz|tgz)$/i.test(path)) return 'tar.gz';
  if (/\.zip$/i.test(path)) return 'zip';
  return null;
}

/**
 * Reads and validates the package at `path`. Throws InputError naming the
 * file and entry for every refusal, and when the file is over `maxBytes`.
 */
export async function readSuppliedPackage(path: string, maxBytes: number): Promise<SuppliedPackage> {
  const format = archiveFormatOf(path);
  if (format === null) throw new InputError(`${path}: a module package must be a .tar.gz, .tgz or .zip file (or give the module's directory)`);
  const size = statSync(path).size;
  if (size > maxBytes)
    throw new InputError(`${path} is ${formatMB(size)}, over the size limit of ${formatMB(maxBytes)}; raise it with --max-size MB if this is intended`);
  const bytes = new Uint8Array(readFileSync(path));
  // The one pipeline of a package's checks (src/protocol/module-package-check.ts), which the publish API runs on the uploaded package.
  const source: ModulePackageSource =
    format === 'zip'
      ? { format, directory: zipInMemory(bytes, nodeInflateRaw), entries: zipInMemory(bytes, nodeInflateRaw) }
      : { format, stream: () => new Blob([bytes]).stream() };
  const checked = await checkModulePackage(source, path, isDocFile);
  const decoder = new TextDecoder();
  const docFiles = new Map([...checked.kept].map(([name, content]) => [name, decoder.decode(content)]));
  return { bytes, format, files: checked.files, docFiles };
}

const inflate = promisify(inflateRaw);

/** node:zlib as the zip reader's inflater; it stops one byte past `maxBytes`, enough for the reader to see the size is wrong. */
const nodeInflateRaw = (compressed: Uint8Array, maxBytes: number): Promise<Uint8Array> => inflate(compressed, { maxOutputLength: maxBytes + 1 });
