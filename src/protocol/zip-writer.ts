/**
 * The one zip writer: a deterministic zip of files — entries in byte order
 * of their names, stored (no compression), every time 1980-01-01 00:00, Unix
 * modes kept — so the same files always give the same bytes and SHA-256.
 * The OCI view (src/store/oci.ts) makes a module published as tar.gz into
 * this zip once, since OpenTofu's `oci://` sources take zip only. Names must
 * be relative and at most 65535 bytes; no ZIP64 (a package over 4 GiB throws).
 */

export interface ZipFileEntry {
  name: string;
  /** Unix mode (e.g. 0o100644), kept in the external attributes. */
  mode: number;
  data: Uint8Array;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE) of `bytes`, as zip records it. */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const DOS_DATE_1980_01_01 = (0 << 9) | (1 << 5) | 1;

/** The zip of `files` (see above). Throws RangeError for a name over 65535 bytes or a zip over 4 GiB. */
export function writeZip(files: readonly ZipFileEntry[]): Uint8Array {
  const encoder = new TextEncoder();
  const entries = [...files]
    .map((file) => ({ ...file, nameBytes: encoder.encode(file.name), crc: crc32(file.data) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let size = 22;
  for (const e of entries) {
    if (e.nameBytes.length > 0xffff) throw new RangeError(`zip entry name too long: ${e.name.slice(0, 80)}`);
    size += 30 + e.nameBytes.length + e.data.length + 46 + e.nameBytes.length;
  }
  if (size > 0xffffffff) throw new RangeError('zip over 4 GiB');
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  const offsets: number[] = [];
  for (const e of entries) {
    offsets.push(at);
    view.setUint32(at, 0x04034b50, true);
    view.setUint16(at + 4, 20, true); // version needed
    view.setUint16(at + 6, 0x0800, true); // UTF-8 names
    view.setUint16(at + 8, 0, true); // stored
    view.setUint16(at + 10, 0, true); // time 00:00
    view.setUint16(at + 12, DOS_DATE_1980_01_01, true);
    view.setUint32(at + 14, e.crc, true);
    view.setUint32(at + 18, e.data.length, true);
    view.setUint32(at + 22, e.data.length, true);
    view.setUint16(at + 26, e.nameBytes.length, true);
    view.setUint16(at + 28, 0, true);
    out.set(e.nameBytes, at + 30);
    out.set(e.data, at + 30 + e.nameBytes.length);
    at += 30 + e.nameBytes.length + e.data.length;
  }
  const central = at;
  entries.forEach((e, i) => {
    view.setUint32(at, 0x02014b50, true);
    view.setUint16(at + 4, (3 << 8) | 20, true); // made by Unix, 2.0
    view.setUint16(at + 6, 20, true);
    view.setUint16(at + 8, 0x0800, true);
    view.setUint16(at + 10, 0, true);
    view.setUint16(at + 12, 0, true);
    view.setUint16(at + 14, DOS_DATE_1980_01_01, true);
    view.setUint32(at + 16, e.crc, true);
    view.setUint32(at + 20, e.data.length, true);
    view.setUint32(at + 24, e.data.length, true);
    view.setUint16(at + 28, e.nameBytes.length, true);
    view.setUint16(at + 30, 0, true); // extra
    view.setUint16(at + 32, 0, true); // comment
    view.setUint16(at + 34, 0, true); // disk
    view.setUint16(at + 36, 0, true); // internal attributes
    view.setUint32(at + 38, ((e.mode & 0xffff) << 16) >>> 0, true);
    view.setUint32(at + 42, offsets[i]!, true);
    out.set(e.nameBytes, at + 46);
    at += 46 + e.nameBytes.length;
  });
  view.setUint32(at, 0x06054b50, true);
  view.setUint16(at + 8, entries.length, true);
  view.setUint16(at + 10, entries.length, true);
  view.setUint32(at + 12, at - central, true);
  view.setUint32(at + 16, central, true);
  return out;
}
