import { readFileSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { createGunzip, inflateRaw } from 'node:zlib';
import tar from 'tar-stream';
import { InputError } from '../../../src/protocol/errors';
import type { ModuleArchiveFormat } from '../../../src/protocol/modules-v1';
import { checkedEntryName, checkedLinkTarget, isDocFile, requireRootConfiguration } from '../../../src/protocol/module-package';
import { readModuleZip } from '../../../src/protocol/module-zip';
import { readZipDirectory, zipInMemory } from '../../../src/protocol/zip-reader';
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
  const entries = format === 'zip' ? await zipEntries(path, bytes) : await tarEntries(path, bytes);
  const files: string[] = [];
  const docFiles = new Map<string, string>();
  // Both readers check every name and link target (once each, with src/protocol/module-package.ts's rules) and give names normalised.
  for (const entry of entries) {
    if (entry.type !== 'file') continue;
    files.push(entry.name);
    if (isDocFile(entry.name) && entry.content) docFiles.set(entry.name, entry.content.toString('utf8'));
  }
  requireRootConfiguration(path, files);
  return { bytes, format, files, docFiles };
}

interface RawEntry {
  /** Checked and normalised (no "./"). */
  name: string;
  type: 'file' | 'directory' | 'link';
  link?: string;
  content?: Buffer;
}

async function tarEntries(path: string, bytes: Uint8Array): Promise<RawEntry[]> {
  const entries: RawEntry[] = [];
  const extract = tar.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: unknown) => {
        if (isDocFile(header.name.replace(/^\.\//, ''))) chunks.push(chunk as Buffer);
      });
      stream.on('end', () => {
        const type =
          header.type === 'file' || header.type === 'contiguous-file'
            ? 'file'
            : header.type === 'directory'
              ? 'directory'
              : header.type === 'symlink' || header.type === 'link'
                ? 'link'
                : null;
        if (type === null) {
          reject(new InputError(`${path}: entry "${header.name}" is a ${header.type}; a module package holds only files, directories and links`));
          return;
        }
        try {
          const name = checkedEntryName(path, header.name);
          if (type === 'link') checkedLinkTarget(path, name, header.linkname ?? '');
          entries.push({ name, type, link: header.linkname ?? undefined, content: Buffer.concat(chunks) });
        } catch (error) {
          reject(error);
          return;
        }
        next();
      });
      stream.on('error', reject);
    });
    extract.on('finish', () => resolve());
    extract.on('error', (error) => reject(new InputError(`${path}: not a valid tar archive (${(error as Error).message})`)));
  });
  const gunzip = createGunzip();
  gunzip.on('error', (error) => extract.destroy(new InputError(`${path}: not valid gzip (${error.message})`)));
  Readable.from([Buffer.from(bytes)])
    .pipe(gunzip)
    .pipe(extract);
  await done;
  return entries;
}

const inflate = promisify(inflateRaw);

/** node:zlib as the zip reader's inflater; it stops one byte past `maxBytes`, enough for the reader to see the size is wrong. */
const nodeInflateRaw = (compressed: Uint8Array, maxBytes: number): Promise<Uint8Array> => inflate(compressed, { maxOutputLength: maxBytes + 1 });

/**
 * The entries of the zip `bytes` (the file `path`), read and checked by
 * readModuleZip (src/protocol/module-zip.ts, which the publish API runs on an
 * uploaded zip too); only the links and the files docs are read from are
 * inflated.
 */
async function zipEntries(path: string, bytes: Uint8Array): Promise<RawEntry[]> {
  const zip = zipInMemory(bytes, nodeInflateRaw);
  const entries = await readModuleZip(zip, await readZipDirectory(zip, path, 'module'), path, isDocFile);
  return entries.map(({ content, ...entry }) => ({ ...entry, content: content && Buffer.from(content.buffer, content.byteOffset, content.byteLength) }));
}
