import { InputError } from '../../protocol/errors';
import type { ModuleArchiveFormat } from '../../protocol/modules-v1';
import { checkedEntryName, checkedLinkTarget, requireRootConfiguration, tarEntryKind } from '../../protocol/module-package';
import { readZipDirectory } from '../../protocol/zip-reader';
import { storedZip, streamedZip } from './stored-zip';
import { readModuleZip } from '../../protocol/module-zip';
import { TarReader, type TarEntry } from '../../protocol/tar';

/**
 * The module package rules (src/protocol/module-package.ts), as `publish-module`
 * checks them on a file (scripts/lib/module/archive.ts), checked on a package
 * stored in R2 without holding it in memory: a zip by readModuleZip (the
 * same function publish-module runs), its directory by range and its entries
 * in one stream; a .tar.gz by streaming it once through the runtime's gzip
 * DecompressionStream and the one tar parser (TarReader, which the module
 * proxy and publish-module read tars with too; file data is skipped, never
 * copied). Refused: an absolute path or a ".."
 * segment, a link leaving the package, a device or FIFO, no .tf/.tofu file at
 * the root, a damaged archive.
 */

/** Checks the package stored under `key`; throws InputError naming `label` for a package the CLI would refuse. */
export async function checkStoredModulePackage(bucket: R2Bucket, key: string, size: number, format: ModuleArchiveFormat, label: string): Promise<void> {
  const names = format === 'zip' ? await zipFileNames(bucket, key, size, label) : await tarNames(bucket, key, label);
  requireRootConfiguration(label, names);
}

/**
 * Names of the files of the zip under `key`, read and checked by
 * readModuleZip as publish-module checks a supplied zip (every entry's local
 * header, overlaps, encryption and methods, names, link targets): the
 * directory by range (storedZip), the entries through one stream
 * (streamedZip), only links inflated. R2 subrequests: 3 at most, whatever
 * the number of entries. Throws InputError naming `label` for a refused zip.
 */
async function zipFileNames(bucket: R2Bucket, key: string, size: number, label: string): Promise<string[]> {
  const directory = await readZipDirectory(storedZip(bucket as never, key, size), label, 'module');
  const zip = streamedZip(bucket as never, key, size);
  try {
    return (await readModuleZip(zip, directory, label)).filter((entry) => entry.type === 'file').map((entry) => entry.name);
  } finally {
    await zip.close();
  }
}

/**
 * Entry names of the .tar.gz under `key`, each checked, read in one streaming
 * pass through the one tar parser (TarReader, src/protocol/tar.ts): the name
 * and link target checked are those extractors use (pax path/linkpath, GNU
 * long names and links), file data is skipped (never copied). Throws
 * InputError naming `label` for an entry the package rules refuse or a
 * stream that is not gzip or tar (damaged or truncated); a plain Error when
 * the object is gone.
 */
async function tarNames(bucket: R2Bucket, key: string, label: string): Promise<string[]> {
  const object = await bucket.get(key);
  if (object === null) throw new Error(`${key} disappeared while being read`);
  const reader = object.body.pipeThrough(new DecompressionStream('gzip')).getReader();
  const tar = new TarReader(() => false);
  const names: string[] = [];
  // The parser's messages do not name the package.
  const named = <T>(read: () => T): T => {
    try {
      return read();
    } catch (error) {
      throw error instanceof InputError ? new InputError(`${label}: ${error.message}`) : error;
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const entry of named(() => tar.push(value))) {
        const name = checkedEntry(label, entry);
        if (name !== null) names.push(name);
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
  return names;
}

/** An entry's checked name, or null for a directory. Throws InputError for a name, link target or type the package rules refuse. */
function checkedEntry(label: string, entry: TarEntry): string | null {
  const name = checkedEntryName(label, entry.name);
  const kind = tarEntryKind(label, name, entry.type);
  if (kind === 'link') checkedLinkTarget(label, name, entry.linkname);
  return kind === 'directory' ? null : name;
}
