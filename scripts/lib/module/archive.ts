import { readFileSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import yauzl from 'yauzl';
import { InputError } from '../../../src/protocol/errors';
import type { ModuleArchiveFormat } from '../../../src/protocol/modules-v1';
import { checkedEntryName, checkedLinkTarget, isDocFile, requireRootConfiguration } from '../../../src/protocol/module-package';
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
  for (const entry of entries) {
    const name = checkedEntryName(path, entry.name);
    if (entry.type === 'link') checkedLinkTarget(path, name, entry.link ?? '');
    if (entry.type !== 'file') continue;
    files.push(name);
    if (isDocFile(name) && entry.content) docFiles.set(name, entry.content.toString('utf8'));
  }
  requireRootConfiguration(path, files);
  return { bytes, format, files, docFiles };
}

interface RawEntry {
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
        entries.push({ name: header.name, type, link: header.linkname ?? undefined, content: Buffer.concat(chunks) });
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

async function zipEntries(path: string, bytes: Uint8Array): Promise<RawEntry[]> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => {
    yauzl.fromBuffer(Buffer.from(bytes), { lazyEntries: true, decodeStrings: true, validateEntrySizes: true, strictFileNames: false }, (error, file) => {
      if (error || !file) reject(new InputError(`${path}: not a valid zip archive (${error?.message ?? 'unreadable'})`));
      else resolve(file);
    });
  });
  const entries: RawEntry[] = [];
  return new Promise<RawEntry[]>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      const unixMode = (entry.externalFileAttributes >>> 16) & 0xffff;
      const isLink = (unixMode & 0o170000) === 0o120000;
      const isDirectory = entry.fileName.endsWith('/');
      const wanted = isLink || isDocFile(entry.fileName.replace(/^\.\//, ''));
      if (isDirectory || !wanted) {
        entries.push({ name: entry.fileName, type: isDirectory ? 'directory' : 'file' });
        zip.readEntry();
        return;
      }
      zip.openReadStream(entry, (error, stream) => {
        if (error || !stream) {
          reject(new InputError(`${path}: entry "${entry.fileName}" is unreadable (${error?.message ?? ''})`));
          return;
        }
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('error', (e) => reject(new InputError(`${path}: entry "${entry.fileName}" is damaged (${e.message})`)));
        stream.on('end', () => {
          const content = Buffer.concat(chunks);
          entries.push(isLink ? { name: entry.fileName, type: 'link', link: content.toString('utf8') } : { name: entry.fileName, type: 'file', content });
          zip.readEntry();
        });
      });
    });
    zip.on('end', () => resolve(entries));
    zip.on('error', (error: Error) =>
      reject(
        new InputError(
          /absolute path|invalid relative path/.test(error.message)
            ? `${path}: entry refused, it would unpack outside the module (${error.message}); a module package holds relative paths only`
            : `${path}: not a valid zip archive (${error.message})`,
        ),
      ),
    );
    zip.readEntry();
  });
}
