import { concatBytes } from '../bytes';
import { InputError } from './errors';

/**
 * Writes the one deterministic module tar every way in uses — publish-module
 * packing a directory (scripts/lib/module/pack.ts) and the module proxy
 * repacking an upstream package (src/mirror/modules/repack.ts); tar.ts reads
 * tars. Compression is the caller's (zlib level 9 in Node for publish-module's
 * unchanged bytes, CompressionStream in the Worker).
 */

const encoder = new TextEncoder();

// The writer's bytes are those tar-stream 3.2.2 wrote for publish-module since
// its first release, header field by field: a module directory packed again
// must give the same .tar.gz, or re-publishing it would not be `unchanged`
// (test/scripts/module/pack-bytes.test.ts pins them).

/** tar-stream's octal field: `n` digits and a space (all 7s when it does not fit). */
const octalField = (value: number, n: number) => {
  const digits = value.toString(8);
  return digits.length > n ? `${'7'.repeat(n)} ` : `${digits.padStart(n, '0')} `;
};

/** [prefix, name] for a ustar header, or null when only a pax record can carry `path` (non-ASCII or too long). */
function ustarName(path: string): [string, string] | null {
  if (encoder.encode(path).length !== path.length) return null;
  let name = path;
  let prefix = '';
  while (name.length > 100) {
    const slash = name.indexOf('/');
    if (slash === -1) return null;
    prefix += prefix ? `/${name.slice(0, slash)}` : name.slice(0, slash);
    name = name.slice(slash + 1);
  }
  return prefix.length > 155 ? null : [prefix, name];
}

function header(prefix: string, name: string, size: number, mode: number, type: string): Uint8Array {
  const block = new Uint8Array(512);
  const put = (text: string, offset: number) => block.set(encoder.encode(text), offset);
  put(name, 0);
  put(octalField(mode & 0o7777, 6), 100);
  put(octalField(0, 6), 108); // uid
  put(octalField(0, 6), 116); // gid
  if (size.toString(8).length > 11) throw new InputError(`a file of ${size} bytes is too large for a module package`);
  put(octalField(size, 11), 124);
  put(octalField(0, 11), 136); // mtime
  put(type, 156);
  put('ustar\0', 257);
  put('00', 263);
  put(octalField(0, 6), 329); // devmajor
  put(octalField(0, 6), 337); // devminor
  put(prefix, 345);
  let sum = 8 * 0x20; // the checksum field counts as spaces
  for (const b of block) sum += b;
  put(octalField(sum, 6), 148);
  return block;
}

/** A pax record "LEN key=value\n", LEN counting itself. */
function paxRecord(key: string, value: string): Uint8Array {
  const body = ` ${key}=${value}\n`;
  const length = encoder.encode(body).length;
  let digits = String(length).length;
  if (length + digits >= 10 ** digits) digits++;
  return encoder.encode(`${length + digits}${body}`);
}

/**
 * The chunks of a deterministic tar of regular `files`, in the order given
 * (callers sort): every header with mtime 0, uid/gid 0, no owner names and
 * `mode` as given; a name ustar cannot hold (over 100 bytes with no split
 * into a 155-byte prefix, or not ASCII) goes in a pax `path` record; two zero
 * blocks at the end. Lazy: a file's data is read when its turn comes, so a
 * caller can stop early. The same files give the same bytes.
 */
export function* tarChunks(files: Iterable<{ name: string; mode: number; data: Uint8Array }>): Generator<Uint8Array> {
  const pad = (size: number) => new Uint8Array((512 - (size % 512)) % 512);
  for (const file of files) {
    const ustar = ustarName(file.name);
    if (ustar) {
      yield header(ustar[0], ustar[1], file.data.length, file.mode, '0');
    } else {
      const record = paxRecord('path', file.name);
      yield header('', 'PaxHeader', record.length, file.mode, 'x');
      yield concatBytes([record, pad(record.length)]);
      yield header('', 'PaxHeader', file.data.length, file.mode, '0');
    }
    yield file.data;
    yield pad(file.data.length);
  }
  yield new Uint8Array(1024);
}

/** tarChunks as one array. */
export function writeTar(files: Iterable<{ name: string; mode: number; data: Uint8Array }>): Uint8Array {
  return concatBytes([...tarChunks(files)]);
}
