import { InputError } from './errors';
import { checkedEntryName, checkedLinkTarget, requireRootConfiguration, tarEntryKind } from './module-package';
import type { ModuleArchiveFormat } from './modules-v1';
import { readModuleZip } from './module-zip';
import { TarReader } from './tar';
import { readZipDirectory, type ZipBytes, type ZipContentSource } from './zip-reader';

/**
 * The one pipeline of a module package's checks, run by every way in on the
 * same package: `publish-module` on a supplied .tar.gz/.zip (in memory,
 * scripts/lib/module/archive.ts) and the Worker's publish API on the uploaded
 * one (read from R2 without holding it, src/store/uploads/stored-module.ts).
 * Every entry through the package rules (src/protocol/module-package.ts:
 * relative names, links inside the package, only files, directories and
 * links), a zip by readModuleZip (every local header, overlaps, methods,
 * encryption), a .tar.gz through the runtime's gzip DecompressionStream and
 * the one tar parser (file data skipped unless kept); then a .tf or .tofu
 * file at the root.
 */

/** Where the package's bytes come from: a .tar.gz as one stream, or a zip's directory and entries sources. */
export type ModulePackageSource =
  | { format: Extract<ModuleArchiveFormat, 'tar.gz'>; stream: () => ReadableStream<Uint8Array> }
  | { format: Extract<ModuleArchiveFormat, 'zip'>; directory: ZipBytes; entries: ZipContentSource };

export interface CheckedModulePackage {
  /** The regular files' names, normalised (no "./"). */
  files: string[];
  /** The contents of the files `keep` asked for, by normalised name. */
  kept: Map<string, Uint8Array>;
}

/**
 * Checks the package (`label` names it in refusals) and returns its files.
 * `keep` says which files' contents to return (the docs' sources for the
 * CLI; none for the API). Throws InputError naming `label` and the entry for
 * every refusal, and for bytes that are not gzip or tar (damaged or truncated).
 */
export async function checkModulePackage(
  source: ModulePackageSource,
  label: string,
  keep: (name: string) => boolean = () => false,
): Promise<CheckedModulePackage> {
  const files: string[] = [];
  const kept = new Map<string, Uint8Array>();
  if (source.format === 'zip') {
    for (const entry of await readModuleZip(source.entries, await readZipDirectory(source.directory, label, 'module'), label, keep)) {
      if (entry.type !== 'file') continue;
      files.push(entry.name);
      if (entry.content) kept.set(entry.name, entry.content);
    }
  } else {
    await readTarGz(source.stream(), label, keep, (name, content) => {
      files.push(name);
      if (content) kept.set(name, content);
    });
  }
  requireRootConfiguration(label, files);
  return { files, kept };
}

/** Streams a .tar.gz once through the tar parser, checking every entry; calls `onFile` for each regular file (its content when kept). */
async function readTarGz(
  stream: ReadableStream<Uint8Array>,
  label: string,
  keep: (name: string) => boolean,
  onFile: (name: string, content: Uint8Array | null) => void,
): Promise<void> {
  const reader = stream.pipeThrough(new DecompressionStream('gzip')).getReader();
  const tar = new TarReader((header) => keep(header.name.replace(/^\.\//, '')));
  // The parser's messages do not name the package; the package rules' do.
  const named = <T>(read: () => T): T => {
    try {
      return read();
    } catch (error) {
      throw error instanceof InputError && !error.message.startsWith(`${label}: `) ? new InputError(`${label}: ${error.message}`) : error;
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const entry of named(() => tar.push(value))) {
        const name = checkedEntryName(label, entry.name);
        const kind = tarEntryKind(label, name, entry.type);
        if (kind === 'link') checkedLinkTarget(label, name, entry.linkname);
        if (kind === 'file') onFile(name, keep(name) ? entry.data : null);
      }
      if (tar.done) break;
    }
    named(() => tar.end());
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError(`${label}: not valid gzip or tar (${String((error as Error)?.message ?? error).slice(0, 120)})`);
  } finally {
    await reader.cancel().catch(() => {});
  }
}
