import { concatBytes } from '../../bytes';
import { InputError } from '../../protocol/errors';

/**
 * Just enough tar for the module proxy, on Web streams (the Worker has no
 * node:zlib): read the entries of a tar stream (ustar, GNU long names, pax
 * `path`/`linkpath`), and write a deterministic ustar archive (pax headers
 * only for names too long for ustar). Damaged input is an InputError.
 */

export interface TarEntry {
  /** Path as written in the archive ("/"-separated, not yet checked). */
  name: string;
  /** '0' file, '5' directory, '2' symlink, '1' hard link, other types as read. */
  type: string;
  mode: number;
  /** Link target for types '1' and '2'. */
  linkname: string;
  data: Uint8Array;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

function field(block: Uint8Array, offset: number, length: number): string {
  const bytes = block.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return decoder.decode(end === -1 ? bytes : bytes.subarray(0, end));
}

function octal(block: Uint8Array, offset: number, length: number, what: string): number {
  const text = field(block, offset, length).trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new InputError(`not a valid tar archive (a header's ${what} is unreadable)`);
  return parseInt(text, 8);
}

function paxRecords(data: Uint8Array): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space === -1) break;
    const length = Number(decoder.decode(data.subarray(at, space)));
    if (!Number.isSafeInteger(length) || length <= 0 || at + length > data.length) throw new InputError('not a valid tar archive (a pax record is damaged)');
    const record = decoder.decode(data.subarray(space + 1, at + length - 1));
    const eq = record.indexOf('=');
    if (eq > 0) records.set(record.slice(0, eq), record.slice(eq + 1));
    at += length;
  }
  return records;
}

/** Parses a whole (decompressed) tar archive. Throws InputError for a truncated or damaged one. */
export function readTar(bytes: Uint8Array): TarEntry[] {
  const entries: TarEntry[] = [];
  let at = 0;
  let pax: Map<string, string> | null = null;
  let longName: string | null = null;
  let longLink: string | null = null;
  while (at + 512 <= bytes.length) {
    const block = bytes.subarray(at, at + 512);
    if (block.every((b) => b === 0)) return entries;
    const stored = octal(block, 148, 8, 'checksum');
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
    if (sum !== stored) throw new InputError('not a valid tar archive (a header checksum does not match)');
    const size = octal(block, 124, 12, 'size');
    const type = String.fromCharCode(block[156]!) || '0';
    const start = at + 512;
    const end = start + size;
    if (end > bytes.length) throw new InputError('not a valid tar archive (it ends inside an entry: truncated)');
    const data = bytes.subarray(start, end);
    at = start + Math.ceil(size / 512) * 512;
    if (type === 'x') { pax = paxRecords(data); continue; }
    if (type === 'g') continue;
    if (type === 'L') { longName = decoder.decode(data).replace(/\0.*$/s, ''); continue; }
    if (type === 'K') { longLink = decoder.decode(data).replace(/\0.*$/s, ''); continue; }
    const prefix = field(block, 345, 155);
    const headerName = prefix ? `${prefix}/${field(block, 0, 100)}` : field(block, 0, 100);
    entries.push({
      name: pax?.get('path') ?? longName ?? headerName,
      type: type === '\0' ? '0' : type,
      mode: octal(block, 100, 8, 'mode'),
      linkname: pax?.get('linkpath') ?? longLink ?? field(block, 157, 100),
      data,
    });
    pax = null;
    longName = null;
    longLink = null;
  }
  if (at < bytes.length || entries.length === 0) throw new InputError('not a valid tar archive (no end-of-archive marker: truncated)');
  return entries;
}

function header(name: string, size: number, mode: number, type: string): Uint8Array {
  const block = new Uint8Array(512);
  const put = (text: string, offset: number, length: number) => block.set(encoder.encode(text).subarray(0, length), offset);
  const num = (value: number, offset: number, length: number) => put(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length);
  let prefix = '';
  let base = name;
  if (encoder.encode(name).length > 100) {
    const cut = name.lastIndexOf('/', 155);
    if (cut > 0 && encoder.encode(name.slice(cut + 1)).length <= 100 && encoder.encode(name.slice(0, cut)).length <= 155) {
      prefix = name.slice(0, cut);
      base = name.slice(cut + 1);
    } else {
      base = name.slice(0, 100); // the pax header before this one carries the real name
    }
  }
  put(base, 0, 100);
  num(mode, 100, 8);
  num(0, 108, 8);
  num(0, 116, 8);
  num(size, 124, 12);
  num(0, 136, 12);
  put(type, 156, 1);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  put(prefix, 345, 155);
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of block) sum += b;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return block;
}

function needsPax(name: string): boolean {
  const length = encoder.encode(name).length;
  if (length <= 100) return false;
  const cut = name.lastIndexOf('/', 155);
  return !(cut > 0 && encoder.encode(name.slice(cut + 1)).length <= 100 && encoder.encode(name.slice(0, cut)).length <= 155);
}

/**
 * A deterministic tar of regular `files` (in the order given): every header
 * with mtime 0, uid/gid 0, no owner names, `mode` as given; two zero blocks
 * at the end. The same files give the same bytes.
 */
export function writeTar(files: readonly { name: string; mode: number; data: Uint8Array }[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const pad = (size: number) => new Uint8Array((512 - (size % 512)) % 512);
  for (const file of files) {
    if (needsPax(file.name)) {
      const body = ` path=${file.name}\n`;
      let length = encoder.encode(body).length;
      length += String(length).length;
      if (String(length).length !== String(length - String(length).length).length) length++;
      const record = encoder.encode(`${length}${body}`);
      parts.push(header('PaxHeader', record.length, 0o644, 'x'), record, pad(record.length));
    }
    parts.push(header(file.name, file.data.length, file.mode, '0'), file.data, pad(file.data.length));
  }
  parts.push(new Uint8Array(1024));
  return concatBytes(parts);
}
