import { InputError } from '../../protocol/errors';
import type { ModuleArchiveFormat } from '../../protocol/modules-v1';
import { checkedEntryName, checkedLinkTarget, requireRootConfiguration } from '../../protocol/module-package';
import { readZipDirectory } from '../../protocol/zip-reader';
import { storedZip, streamedZip } from './stored-zip';
import { readModuleZip } from '../../protocol/module-zip';
import { concatBytes } from '../../bytes';

/**
 * The module package rules (src/protocol/module-package.ts), as `publish-module`
 * checks them on a file (scripts/lib/module/archive.ts), checked on a package
 * stored in R2 without holding it in memory: a zip by readModuleZip (the
 * same function publish-module runs), its directory by range and its entries
 * in one stream; a .tar.gz by streaming it once through the runtime's gzip
 * DecompressionStream and reading each 512-byte tar header
 * (file data is skipped, never copied). Refused: an absolute path or a ".."
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

const decoder = new TextDecoder();
const field = (block: Uint8Array, offset: number, length: number) => {
  const bytes = block.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return decoder.decode(end === -1 ? bytes : bytes.subarray(0, end));
};

/**
 * Entry names of the .tar.gz under `key`, each checked (TarHeaders), read in
 * one streaming pass. Throws InputError naming `label` for an entry the
 * package rules refuse or a stream that is not gzip or tar; a plain Error
 * when the object is gone.
 */
async function tarNames(bucket: R2Bucket, key: string, label: string): Promise<string[]> {
  const object = await bucket.get(key);
  if (object === null) throw new Error(`${key} disappeared while being read`);
  const reader = object.body.pipeThrough(new DecompressionStream('gzip')).getReader();
  const tar = new TarHeaders(label);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || tar.push(value)) break;
    }
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError(`${label}: not valid gzip or tar (${String((error as Error)?.message ?? error).slice(0, 120)})`);
  } finally {
    await reader.cancel().catch(() => {});
  }
  return tar.names;
}

/**
 * A tar stream's headers, fed chunk by chunk (chunks may split a header
 * anywhere): each 512-byte header is read, file data is skipped (never
 * copied), and a pax `path` or GNU long name is collected for the entry that
 * follows it. `names` gathers every entry but directories, checked.
 */
class TarHeaders {
  readonly names: string[] = [];
  private pending: Uint8Array = new Uint8Array(0); // bytes of an incomplete header
  private skip = 0; // data bytes (rounded to 512) still to skip
  private paxPath: string | null = null;
  private longName: string | null = null;
  private collecting: { kind: 'pax' | 'longname'; size: number; bytes: Uint8Array[]; got: number } | null = null;

  constructor(private readonly label: string) {}

  /** Reads `chunk`; true once the end-of-archive block was read (nothing after it counts). Throws InputError for a refused entry. */
  push(chunk: Uint8Array): boolean {
    let rest = chunk;
    while (rest.byteLength > 0) {
      if (this.skip > 0) {
        rest = this.skipData(rest);
        continue;
      }
      const take = rest.subarray(0, 512 - this.pending.byteLength);
      this.pending = concatBytes([this.pending, take]);
      rest = rest.subarray(take.byteLength);
      if (this.pending.byteLength < 512) continue;
      const block = this.pending;
      this.pending = new Uint8Array(0);
      if (block.every((b) => b === 0)) return true;
      this.header(block);
    }
    return false;
  }

  /** Skips entry data at the start of `chunk` (collecting a pax or long-name entry's); returns what follows it. */
  private skipData(chunk: Uint8Array): Uint8Array {
    const n = Math.min(this.skip, chunk.byteLength);
    const collecting = this.collecting;
    if (collecting) {
      const take = Math.min(n, collecting.size - collecting.got);
      if (take > 0) collecting.bytes.push(chunk.slice(0, take));
      collecting.got += take;
    }
    this.skip -= n;
    if (this.skip === 0 && collecting) {
      const text = decoder.decode(concatBytes(collecting.bytes));
      if (collecting.kind === 'longname') this.longName = text.replace(/\0.*$/s, '');
      else this.paxPath = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(text)?.[1] ?? null;
      this.collecting = null;
    }
    return chunk.subarray(n);
  }

  /** One header block: its data to skip, and its entry checked (name, link target, type) and listed. */
  private header(block: Uint8Array): void {
    const { label } = this;
    const size = parseInt(field(block, 124, 12).trim() || '0', 8);
    if (!Number.isFinite(size) || size < 0) throw new InputError(`${label}: not a valid tar archive (a header's size is unreadable)`);
    const type = String.fromCharCode(block[156]!);
    const prefix = field(block, 345, 155);
    const headerName = prefix ? `${prefix}/${field(block, 0, 100)}` : field(block, 0, 100);
    this.skip = Math.ceil(size / 512) * 512;
    if (type === 'x' || type === 'L') {
      this.collecting = this.skip === 0 ? null : { kind: type === 'x' ? 'pax' : 'longname', size, bytes: [], got: 0 };
      return;
    }
    if (type === 'g') return;
    const name = checkedEntryName(label, this.paxPath ?? this.longName ?? headerName);
    this.paxPath = null;
    this.longName = null;
    if (type === '2' || type === '1') checkedLinkTarget(label, name, field(block, 157, 100));
    else if (type !== '0' && type !== '\0' && type !== '5' && type !== '7') {
      throw new InputError(
        `${label}: entry "${name}" is a ${{ 3: 'character device', 4: 'block device', 6: 'FIFO' }[type] ?? `type ${type} entry`}; a module package holds only files, directories and links`,
      );
    }
    if (type !== '5') this.names.push(name);
  }
}
