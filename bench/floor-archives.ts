import { execFileSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { constants as zlibConstants, crc32, deflateRawSync } from 'node:zlib';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const MiB = 1024 * 1024;

/**
 * The archives bench/write-floor.ts measures, made in Node: provider zips laid out for the bench Worker's
 * HeldArchive (a valid zip of one repeated block, so 200 MiB takes ~1 MiB) and a module tarball of a given size.
 */

function body(kind: 'stored' | 'deflated', bytes: number): Buffer {
  const data = randomFillSync(Buffer.alloc(bytes));
  if (kind === 'deflated') for (let i = 0; i < data.length; i++) data[i]! &= 0x0f;
  return data;
}

/** A provider zip laid out for the bench Worker's HeldArchive: `head`, then `block` `count` times, then `tail`. */
export interface ZipLayout {
  head: Buffer;
  block: Buffer;
  count: number;
  tail: Buffer;
  size: number;
  sha256: string;
}

/**
 * A ~`zipBytes` provider zip as goreleaser makes one (the executable, README.md, LICENSE; Unix modes, sizes and
 * CRC-32 in the headers), whose executable's data is one 1 MiB block repeated, so the Worker can hold 200 MiB.
 * "stored": incompressible bytes, method 0. "deflated": a 4-bit-entropy executable (inflating to ~1.9× the
 * zip), each block deflated alone and ended with a full flush (byte-aligned, no reference to earlier blocks),
 * so copies of it in a row, then an empty final block, are one valid deflate stream.
 */
export function zipLayout(kind: 'stored' | 'deflated', zipBytes: number): ZipLayout {
  const plain = body(kind, MiB);
  const block = kind === 'stored' ? plain : deflateRawSync(plain, { finishFlush: zlibConstants.Z_FULL_FLUSH });
  const count = Math.max(1, Math.round(zipBytes / block.byteLength));
  const finalBlock = kind === 'stored' ? Buffer.alloc(0) : Buffer.from([0x03, 0x00]);
  let crc = 0;
  for (let i = 0; i < count; i++) crc = crc32(plain, crc);
  const method = kind === 'stored' ? 0 : 8;
  const small = (name: string, data: Buffer) => ({
    name,
    mode: 0o100644,
    method: 0,
    crc: crc32(data),
    compressed: data.byteLength,
    size: data.byteLength,
    data,
  });
  const entries: { name: string; mode: number; method: number; crc: number; compressed: number; size: number; data?: Buffer }[] = [
    {
      name: 'terraform-provider-big_v1.0.0',
      mode: 0o100755,
      method,
      crc,
      compressed: block.byteLength * count + finalBlock.byteLength,
      size: plain.byteLength * count,
    },
    small('README.md', Buffer.from('# big\n'.repeat(200))),
    small('LICENSE', Buffer.from('Mozilla Public License 2.0\n'.repeat(400))),
  ];
  const DOS_TIME = 0; // 00:00:00
  const DOS_DATE = ((2026 - 1980) << 9) | (1 << 5) | 1; // 2026-01-01
  // The fields a local header and a central directory header share, in the same order, from `at`.
  const entryFields = (h: Buffer, e: (typeof entries)[number], at: number) => {
    h.writeUInt16LE(e.method, at);
    h.writeUInt16LE(DOS_TIME, at + 2);
    h.writeUInt16LE(DOS_DATE, at + 4);
    h.writeUInt32LE(e.crc >>> 0, at + 6);
    h.writeUInt32LE(e.compressed, at + 10);
    h.writeUInt32LE(e.size, at + 14);
    h.writeUInt16LE(Buffer.byteLength(e.name), at + 18);
  };
  const local = (e: (typeof entries)[number]) => {
    const h = Buffer.alloc(30);
    h.writeUInt32LE(0x04034b50, 0);
    h.writeUInt16LE(20, 4);
    h.writeUInt16LE(0x0800, 6); // UTF-8 names
    entryFields(h, e, 8);
    return Buffer.concat([h, Buffer.from(e.name)]);
  };
  const central = (e: (typeof entries)[number], offset: number) => {
    const h = Buffer.alloc(46);
    h.writeUInt32LE(0x02014b50, 0);
    h.writeUInt16LE((3 << 8) | 20, 4); // made by Unix
    h.writeUInt16LE(20, 6);
    h.writeUInt16LE(0x0800, 8);
    entryFields(h, e, 10);
    h.writeUInt32LE((e.mode << 16) >>> 0, 38);
    h.writeUInt32LE(offset, 42);
    return Buffer.concat([h, Buffer.from(e.name)]);
  };
  const head = local(entries[0]!);
  const tailParts: Buffer[] = [finalBlock];
  const offsets = [0];
  let at = head.byteLength + entries[0]!.compressed;
  for (const e of entries.slice(1)) {
    offsets.push(at);
    const header = local(e);
    tailParts.push(header, e.data!);
    at += header.byteLength + e.compressed;
  }
  const directory = Buffer.concat(entries.map((e, i) => central(e, offsets[i]!)));
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.byteLength, 12);
  end.writeUInt32LE(at, 16);
  const tail = Buffer.concat([...tailParts, directory, end]);
  const hash = createHash('sha256').update(head);
  for (let i = 0; i < count; i++) hash.update(block);
  hash.update(tail);
  return { head, block, count, tail, size: head.byteLength + block.byteLength * count + tail.byteLength, sha256: hash.digest('hex') };
}

export function makeModule(dir: string, bytes: number): Buffer {
  const root = join(dir, 'terraform-aws-big-1.0.0');
  mkdirSync(join(root, 'files'), { recursive: true });
  writeFileSync(join(root, 'main.tf'), 'variable "name" {}\noutput "name" { value = var.name }\n');
  writeFileSync(join(root, 'README.md'), '# big\n');
  writeFileSync(join(root, 'files', 'data.bin'), body('deflated', bytes));
  execFileSync('tar', ['--sort=name', '--mtime=2026-01-01', '-czf', join(dir, 'module.tar.gz'), '-C', dir, 'terraform-aws-big-1.0.0']);
  return readFileSync(join(dir, 'module.tar.gz'));
}
