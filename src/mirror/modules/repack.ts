import { MAX_README_BYTES } from '../../http/readme';
import { InputError } from '../../protocol/errors';
import { readZipDirectory, readZipEntries, zipInMemory } from '../../protocol/zip-reader';
import { checkedEntryName, isDocFile, isExcludedFromPackage } from '../../protocol/module-package';
import { bytesStream, concatBytes } from '../../bytes';
import { readTar, type TarEntry } from '../../protocol/tar';
import { writeTar } from '../../protocol/tar-write';

/**
 * A fetched upstream package made into a module package of ours: the
 * archive unpacked (tar.gz, or zip), its top-level directory stripped for a
 * GitHub tarball (or `//*`), narrowed to a `//subdir`, checked by the rules
 * publish-module applies (relative paths only, no "..", no devices, a .tf or
 * .tofu file at the root), and packed again deterministically as
 * publish-module packs a directory (scripts/lib/module/pack.ts): regular
 * files only, sorted by path, mtime 0, uid/gid 0, mode 0644 or 0755; a
 * symlink to a file inside the package becomes that file's bytes, other
 * links are left out; `.git/`, `.terraform/`, state files left out.
 * The same upstream files give the same bytes.
 */

export interface RepackLimits {
  /** Largest unpacked size (sum of the files) accepted. */
  maxUnpackedBytes: number;
}

export interface Repacked {
  /** The .tar.gz bytes. */
  bytes: Uint8Array;
  /** Package path → text of the files the docs are read from (.tf/.tofu, README.md). */
  texts: Map<string, string>;
  fileCount: number;
}

interface FileEntry {
  name: string;
  mode: number;
  data: Uint8Array;
}

/**
 * Repacks `bytes` (a `format` archive). Throws InputError naming `label` for
 * a damaged archive, one over the limit, a path leaving the package, a
 * missing subdirectory, or no .tf/.tofu file at the root.
 */
export async function repackModule(
  bytes: Uint8Array,
  format: 'tar.gz' | 'zip',
  options: { stripTop: boolean; subdir: string; label: string } & RepackLimits,
): Promise<Repacked> {
  const { label } = options;
  let entries: TarEntry[];
  try {
    entries = format === 'zip' ? await unzip(bytes, options.maxUnpackedBytes, label) : readTar(await gunzip(bytes, options.maxUnpackedBytes + 4 * 1024 * 1024));
  } catch (error) {
    // The zip reader's messages name the package already; the tar reader's do not.
    if (error instanceof InputError) throw format === 'zip' ? error : new InputError(`${label}: ${error.message}`);
    throw new InputError(`${label}: not a valid ${format} archive (${String((error as Error)?.message ?? error).slice(0, 120)})`);
  }
  const cleaned = entries.map((e) => ({ ...e, name: checkedEntryName(label, e.name) })).filter((e) => e.name !== '');
  let prefix = '';
  if (options.stripTop) {
    const tops = new Set(cleaned.map((e) => e.name.split('/')[0]));
    if (tops.size !== 1) throw new InputError(`${label}: expected one top-level directory (as GitHub's tarballs have), found ${tops.size}`);
    prefix = `${[...tops][0]}/`;
  }
  if (options.subdir) prefix += `${options.subdir}/`;
  const inside = cleaned
    .filter((e) => e.name.startsWith(prefix))
    .map((e) => ({ ...e, name: e.name.slice(prefix.length) }))
    .filter((e) => e.name !== '');
  if (options.subdir && inside.length === 0) throw new InputError(`${label}: has no subdirectory ${options.subdir}`);

  const regular = new Map(inside.filter((e) => e.type === '0' || e.type === '7').map((e) => [e.name, e]));
  const files: FileEntry[] = [];
  let unpacked = 0;
  for (const entry of inside) {
    if (isExcludedFromPackage(entry.name)) continue;
    let data: Uint8Array | null = null;
    if (entry.type === '0' || entry.type === '7') data = entry.data;
    else if (entry.type === '1' || entry.type === '2') {
      const target = entry.type === '1' ? checkedEntryName(label, entry.linkname).slice(prefix.length) : resolveLink(entry.name, entry.linkname);
      data = target === null ? null : (regular.get(target)?.data ?? null); // a link leaving the package or to a directory is left out
    } else if (entry.type !== '5') {
      throw new InputError(
        `${label}: entry "${entry.name}" is a ${{ 3: 'character device', 4: 'block device', 6: 'FIFO' }[entry.type] ?? `type ${entry.type} entry`}; a module package holds only files, directories and links`,
      );
    }
    if (data === null) continue;
    unpacked += data.length;
    if (unpacked > options.maxUnpackedBytes)
      throw new InputError(`${label}: unpacks to more than ${options.maxUnpackedBytes} bytes, over the module proxy's limit`);
    files.push({ name: entry.name, mode: entry.mode & 0o111 ? 0o755 : 0o644, data });
  }
  if (!files.some((f) => !f.name.includes('/') && /\.(tf|tofu)$/.test(f.name))) {
    throw new InputError(`${label}: has no .tf or .tofu file at its root${options.subdir ? ` (subdirectory ${options.subdir})` : ''}: not a module`);
  }
  const seen = new Set<string>();
  const unique = files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).filter((f) => !seen.has(f.name) && seen.add(f.name));
  const texts = new Map<string, string>();
  const decoder = new TextDecoder();
  for (const file of unique) {
    // A README past the renderer's cap is decoded only that far: renderReadme then says it is too large.
    if (isDocFile(file.name)) texts.set(file.name, decoder.decode(file.name.endsWith('README.md') ? file.data.subarray(0, MAX_README_BYTES + 4) : file.data));
  }
  return { bytes: await gzip(writeTar(unique)), texts, fileCount: unique.length };
}

/** A symlink's target as a package path, or null when it leaves the package. */
function resolveLink(name: string, target: string): string | null {
  if (target.startsWith('/')) return null;
  const parts = name.split('/').slice(0, -1);
  for (const part of target.split('/')) {
    if (part === '..') {
      if (parts.length === 0) return null;
      parts.pop();
    } else if (part !== '' && part !== '.') parts.push(part);
  }
  return parts.join('/');
}

async function collect(stream: ReadableStream<Uint8Array>, limit: number, what: string): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new InputError(`${what} is over ${limit} bytes, over the module proxy's limit`);
    }
    chunks.push(value);
  }
  return concatBytes(chunks, total);
}

async function gunzip(bytes: Uint8Array, limit: number): Promise<Uint8Array> {
  return collect(bytesStream(bytes).pipeThrough(new DecompressionStream('gzip')), limit, 'the unpacked tar');
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return collect(bytesStream(bytes).pipeThrough(new CompressionStream('gzip')), Number.MAX_SAFE_INTEGER, 'the package');
}

/** DecompressionStream (native) as the zip reader's inflater: at most `maxBytes` are collected. */
const inflateRaw = (compressed: Uint8Array, maxBytes: number) =>
  collect(bytesStream(compressed).pipeThrough(new DecompressionStream('deflate-raw')), maxBytes, 'the entry');

/**
 * The files of the zip `bytes`, as tar entries in its central directory's
 * order (mode 0644, a symlink as its target's text: as the proxy always
 * read zips, so repacked bytes do not change), read and checked by the one
 * zip reader (src/protocol/zip-reader.ts). Refused before anything is
 * inflated: files summing to over `limit` bytes by their headers.
 */
async function unzip(bytes: Uint8Array, limit: number, label: string): Promise<TarEntry[]> {
  const zip = zipInMemory(bytes, inflateRaw);
  const directory = await readZipDirectory(zip, label, 'module');
  const files = directory.entries.filter((entry) => !entry.isDirectory);
  let total = 0;
  for (const entry of files) {
    total += entry.uncompressedSize;
    if (total > limit) throw new InputError(`${label}: unpacks to more than ${limit} bytes, over the module proxy's limit`);
  }
  const contents = await readZipEntries(zip, directory, label, 'module', (entry) => !entry.isDirectory);
  return files.map((entry) => ({ name: entry.name, type: '0', mode: 0o644, linkname: '', data: contents.get(entry)! }));
}
