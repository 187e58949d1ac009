import { readFileSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { createGunzip, inflateRaw } from 'node:zlib';
import { InputError } from '../../../src/protocol/errors';
import { TarReader, type TarEntry } from '../../../src/protocol/tar';
import type { ModuleArchiveFormat } from '../../../src/protocol/modules-v1';
import { checkedEntryName, checkedLinkTarget, isDocFile, requireRootConfiguration, tarEntryKind } from '../../../src/protocol/module-package';
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

/**
 * The entries of the .tar.gz `bytes` (the file `path`), gunzipped by node:zlib
 * as a stream and read by the one tar parser (TarReader, src/protocol/tar.ts,
 * which the publish API and the module proxy read tars with too): names and
 * link targets as extractors read them (pax path/linkpath, GNU long names and
 * links), each checked; only the files docs are read from are kept. Throws
 * InputError naming `path` for a refused entry, a damaged or truncated tar,
 * or bytes that are not gzip.
 */
async function tarEntries(path: string, bytes: Uint8Array): Promise<RawEntry[]> {
  const entries: RawEntry[] = [];
  const reader = new TarReader((header) => isDocFile(header.name.replace(/^\.\//, '')));
  const gunzip = Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]).pipe(createGunzip());
  try {
    for await (const chunk of gunzip) {
      for (const entry of reader.push(chunk as Buffer)) entries.push(checkedTarEntry(path, entry));
      if (reader.done) break;
    }
    reader.end();
  } catch (error) {
    if (!(error instanceof InputError)) throw new InputError(`${path}: not valid gzip (${(error as Error).message})`);
    // The parser's messages do not name the file; the package rules' do.
    throw error.message.startsWith(`${path}: `) ? error : new InputError(`${path}: ${error.message}`);
  } finally {
    gunzip.destroy();
  }
  return entries;
}

/** A tar entry as a RawEntry, its name (and link target) checked. Throws InputError for a name, link or type the package rules refuse. */
function checkedTarEntry(path: string, entry: TarEntry): RawEntry {
  const name = checkedEntryName(path, entry.name);
  const type = tarEntryKind(path, name, entry.type);
  if (type === 'link') checkedLinkTarget(path, name, entry.linkname);
  return {
    name,
    type,
    link: type === 'link' ? entry.linkname : undefined,
    content: Buffer.from(entry.data.buffer, entry.data.byteOffset, entry.data.byteLength),
  };
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
