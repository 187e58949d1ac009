import { InputError } from './errors';
import { checkedEntryName, checkedLinkTarget } from './module-package';
import { readZipEntries, type ZipContentSource } from './zip-reader';
import type { ZipDirectory, ZipEntry } from './zip';

/**
 * A module package's zip read as `publish-module` reads a supplied one
 * (scripts/lib/module/archive.ts, the zip in memory) and as the publish API
 * checks an uploaded one (src/store/uploads/stored-module.ts, the zip in
 * R2): every entry through the one zip reader's checks (readZipEntries),
 * then each entry's name and each link's target by the module package
 * rules. One function, so the two ways in refuse the same zips with the
 * same messages.
 */

/** One entry of a module zip, its name checked and normalised ("./a\\b" → "a/b"). */
export interface ModuleZipEntry {
  name: string;
  type: 'file' | 'directory' | 'link';
  /** A link's target, checked to stay inside the package. */
  link?: string;
  /** A file's contents, when `wantFile` asked for them. */
  content?: Uint8Array;
}

/** Longest link target read: a path longer than PATH_MAX (4096) names nothing, and a link's bytes are held in memory. */
export const MAX_ZIP_LINK_BYTES = 4096;

/** A symlink by its Unix file type, whatever system made the zip (as publish-module has read them since it read zips). */
const isZipLink = (entry: ZipEntry) => ((entry.externalAttributes >>> 16) & 0o170000) === 0o120000;
/** A name ending in a separator, a Windows one included, is a directory. */
const isZipDirectory = (entry: ZipEntry) => entry.isDirectory || entry.name.endsWith('\\');

const linkDecoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }); // the target's bytes as they are, as Buffer.toString read them

/**
 * The entries of the module zip `source` (its central directory read as
 * `directory`, kind 'module'), in the directory's order. Every entry passes
 * the zip reader's checks (see readZipEntries) before any name is judged;
 * then each name passes checkedEntryName and each link's target
 * checkedLinkTarget. Inflated: the links (each at most MAX_ZIP_LINK_BYTES)
 * and the files whose normalised name `wantFile` picks. Throws InputError
 * naming `label` for every refusal.
 */
export async function readModuleZip(
  source: ZipContentSource,
  directory: ZipDirectory,
  label: string,
  wantFile: (name: string) => boolean = () => false,
): Promise<ModuleZipEntry[]> {
  const wanted = (entry: ZipEntry): boolean => {
    if (isZipDirectory(entry)) return false;
    if (!isZipLink(entry)) return wantFile(entry.name.replace(/\\/g, '/').replace(/^\.\//, ''));
    // Refused before it is inflated: its bytes would be held whole.
    if (entry.uncompressedSize > MAX_ZIP_LINK_BYTES || entry.compressedSize > 2 * MAX_ZIP_LINK_BYTES)
      throw new InputError(`${label}: link ${JSON.stringify(entry.name.slice(0, 100))} has a target over ${MAX_ZIP_LINK_BYTES} bytes; refused`);
    return true;
  };
  const contents = await readZipEntries(source, directory, label, 'module', wanted);
  return directory.entries.map((entry): ModuleZipEntry => {
    const name = checkedEntryName(label, entry.name);
    if (isZipDirectory(entry)) return { name, type: 'directory' };
    const content = contents.get(entry);
    if (!isZipLink(entry)) return { name, type: 'file', content };
    const link = linkDecoder.decode(content);
    checkedLinkTarget(label, name, link);
    return { name, type: 'link', link };
  });
}
