/**
 * `npx tsx bench/write-floor.ts [--quick] [--json] [SIZES_MIB…]` (and part of `npm run bench`): each write
 * path's Worker CPU per MiB of archive next to the runtime's native floor, measured in the same run, in
 * the same workerd, on the same bytes (bench/bench-worker.ts's /__bench endpoints):
 *
 * - floor zh: the archive piped into crypto.DigestStream; floor h1: each entry piped through
 *   DecompressionStream('deflate-raw') into crypto.DigestStream; module floor: gunzip, gzip and SHA-256 of
 *   the package; all native streams, no JS per chunk;
 * - pull-through (ours): the verified copy (SHA-256 while feeding the client and the R2 put, last block held
 *   back until the bytes passed) plus the background commit's h1 (src/mirror/zip-digest.ts); its floor:
 *   zh + h1, and beside it the floor with delivery: native tees into the digest and two FixedLengthStreams
 *   (R2's put and the client's response need known lengths) sent to sockets, plus the h1 floor;
 * - API publish commit (ours, a zip staged in parts): whole-object SHA-256, entries and h1, as
 *   src/store/uploads/staged.ts and src/routes/publish/provider-commit.ts do them; its floor: zh + h1.
 *   (The PUT of each part is a native R2 put: 0–5 ms, bench/publish-api.ts.)
 * - module proxy (ours): src/mirror/modules/repack.ts + SHA-256; its floor: gunzip + gzip + SHA-256.
 *
 * Each figure is workerd's process CPU (every thread's schedstat) for one request, the least of three. The
 * archive is held in the isolate and what goes to R2 or the client is POSTed to a discard server on loopback,
 * so no storage simulator or response proxy of Miniflare's runs in those requests: the process CPU is the
 * Worker's own, including the runtime's native stream work on its behalf. Zips: "stored" (incompressible,
 * method 0) and "deflated" (an executable-like 4-bit-entropy body, inflating to ~1.9× the zip), three
 * entries each as goreleaser makes them (zipLayout). Sizes: 1 and 10 MiB with --quick, else 1, 10, 50 and
 * 200 MiB (module packages up to 50 MiB: the proxy takes 100 MB at most).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { constants as zlibConstants, crc32, deflateRawSync } from 'node:zlib';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from './build';
import { startRuntime } from './runtime';
import { cpuNanos } from './proc';
import { planFor } from './worker-cpu';

const MiB = 1024 * 1024;

export interface WritePathFigures {
  path: string;
  kind: string;
  mib: number;
  oursMs: number;
  floorMs: number;
  oursPerMiB: number;
  floorPerMiB: number;
  ratio: number;
  plan: string;
  /**
   * Pull-through only: the floor with the runtime's least cost of handing the bytes to R2 and to the client
   * (native tees into the digest and two FixedLengthStreams sent to sockets, plus the h1 floor).
   */
  floorWithDeliveryMs?: number;
  ratioWithDelivery?: number;
}

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
  const entries: { name: string; mode: number; method: number; crc: number; compressed: number; size: number; data?: Buffer }[] = [
    {
      name: 'terraform-provider-big_v1.0.0',
      mode: 0o100755,
      method,
      crc,
      compressed: block.byteLength * count + finalBlock.byteLength,
      size: plain.byteLength * count,
    },
    ...[
      ['README.md', Buffer.from('# big\n'.repeat(200))],
      ['LICENSE', Buffer.from('Mozilla Public License 2.0\n'.repeat(400))],
    ].map(([name, data]) => ({
      name: name as string,
      mode: 0o100644,
      method: 0,
      crc: crc32(data as Buffer),
      compressed: (data as Buffer).byteLength,
      size: (data as Buffer).byteLength,
      data: data as Buffer,
    })),
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

function makeModule(dir: string, bytes: number): Buffer {
  const root = join(dir, 'terraform-aws-big-1.0.0');
  mkdirSync(join(root, 'files'), { recursive: true });
  writeFileSync(join(root, 'main.tf'), 'variable "name" {}\noutput "name" { value = var.name }\n');
  writeFileSync(join(root, 'README.md'), '# big\n');
  writeFileSync(join(root, 'files', 'data.bin'), body('deflated', bytes));
  execFileSync('tar', ['--sort=name', '--mtime=2026-01-01', '-czf', join(dir, 'module.tar.gz'), '-C', dir, 'terraform-aws-big-1.0.0']);
  return readFileSync(join(dir, 'module.tar.gz'));
}

/** Measures every path at every size; `work` is a scratch directory. */
export async function benchWriteFloor(work: string, sizes: number[], log: (line: string) => void = () => {}): Promise<WritePathFigures[]> {
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/bench-worker.ts') });
  const sink = await discardServer();
  const rows: WritePathFigures[] = [];
  try {
    // One request's workerd CPU (ms): the bytes are in the isolate already, so there is no storage I/O and
    // nothing but the Worker runs; the least of three (the machine is shared).
    const cpuOf = async (url: string, init?: RequestInit): Promise<number> => {
      let least = Infinity;
      for (let i = 0; i < 3; i++) {
        const before = cpuNanos(runtime.pid);
        const response = await fetch(`${runtime.origin}${url}`, init);
        const text = await response.text();
        const ms = (cpuNanos(runtime.pid) - before) / 1e6;
        if (response.status !== 200) throw new Error(`${url}: HTTP ${response.status} ${text.slice(0, 300)}`);
        least = Math.min(least, ms);
      }
      return least;
    };
    const push = (path: string, kind: string, mib: number, oursMs: number, floorMs: number, floorWithDeliveryMs?: number) => {
      rows.push({
        path,
        kind,
        mib,
        oursMs,
        floorMs,
        oursPerMiB: oursMs / mib,
        floorPerMiB: floorMs / mib,
        ratio: floorMs > 0 ? oursMs / floorMs : NaN,
        plan: planFor(oursMs),
        ...(floorWithDeliveryMs === undefined ? {} : { floorWithDeliveryMs, ratioWithDelivery: oursMs / floorWithDeliveryMs }),
      });
      const r = rows.at(-1)!;
      log(
        `write-floor: ${path}, ${kind} ${mib.toFixed(1)} MiB: ours ${r.oursMs.toFixed(1)} ms, floor ${r.floorMs.toFixed(1)} ms (${r.ratio.toFixed(2)}×)${floorWithDeliveryMs === undefined ? '' : `, floor with delivery ${floorWithDeliveryMs.toFixed(1)} ms (${r.ratioWithDelivery!.toFixed(2)}×)`}`,
      );
    };
    for (const mib of sizes) {
      for (const kind of ['stored', 'deflated'] as const) {
        const zip = zipLayout(kind, mib * MiB);
        const key = `bench/archive.zip`; // one at a time in the isolate
        const sha = zip.sha256;
        const put = await fetch(
          `${runtime.origin}/__bench/object?key=${encodeURIComponent(key)}&head=${zip.head.byteLength}&block=${zip.block.byteLength}&count=${zip.count}`,
          {
            method: 'PUT',
            body: Buffer.concat([zip.head, zip.block, zip.tail]),
          },
        );
        const stored = await put.text();
        if (put.status !== 200 || JSON.parse(stored).size !== zip.size) throw new Error(`storing ${key}: HTTP ${put.status} ${stored.slice(0, 200)}`);
        const q = `key=${encodeURIComponent(key)}&sink=${encodeURIComponent(sink.url)}`;
        const size = zip.size / MiB;
        // Warm the code paths once (a warm isolate, as the goals say), then measure ours and the floor interleaved.
        if (mib === sizes[0] && kind === 'stored')
          log(`write-floor: source chunks ${await (await fetch(`${runtime.origin}/__bench/cpu?what=mem-chunks&${q}`)).text()}`);
        const floorZh = await cpuOf(`/__bench/cpu?what=mem-floor-zh&${q}`);
        const floorH1 = await cpuOf(`/__bench/cpu?what=mem-floor-h1&${q}`);
        const copy = await cpuOf(`/__bench/cpu?what=mem-zh-copy&${q}&sha=${sha}`);
        const h1 = await cpuOf(`/__bench/cpu?what=mem-h1&${q}`);
        const commit = await cpuOf(`/__bench/cpu?what=mem-commit-hash&${q}`);
        const floorZhDelivery = await cpuOf(`/__bench/cpu?what=mem-floor-zh-delivery&${q}`);
        push('pull-through (copy + h1)', kind, size, copy + h1, floorZh + floorH1, floorZhDelivery + floorH1);
        push('API publish commit (zh + h1)', kind, size, commit, floorZh + floorH1);
      }
      if (mib > MAX_MODULE_MIB) continue; // the module proxy takes packages up to 100 MB
      const dir = join(work, `module-${mib}`);
      const tarball = makeModule(dir, mib * MiB);
      const ours = await cpuOf('/__bench/repack?times=1', { method: 'POST', body: tarball });
      const floor = await cpuOf('/__bench/floor-repack?times=1', { method: 'POST', body: tarball });
      // The POST body itself is read by both alike; per MiB of the upstream tarball.
      push('module proxy (repack + gzip + SHA-256)', 'tar.gz', tarball.byteLength / MiB, ours, floor);
    }
  } finally {
    await runtime.dispose();
    await sink.close();
  }
  return rows;
}

const MAX_MODULE_MIB = 50;

/**
 * A loopback HTTP server that reads and drops every request body: where the bench Worker sends what goes to
 * R2 and to the client, so the runtime hands the bytes to a socket natively, as it does on the edge.
 */
export async function discardServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

export interface SigningFigures {
  key: string;
  /** Worker CPU of one signature (ms), as the publish commit makes it. */
  cpuMs: number;
}

/**
 * What one signature by a registry-held key costs the Worker (the publish commit's only OpenPGP work), per
 * key type, through openpgp.js as src/store/keys/held-keys.ts signs, next to WebCrypto signing the same
 * bytes: workerd's CPU of N signatures minus that of 0, over N, in a warm isolate.
 */
export async function benchSigning(work: string, log: (line: string) => void = () => {}): Promise<SigningFigures[]> {
  const openpgp = await import('openpgp');
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/bench-worker.ts') });
  const rows: SigningFigures[] = [];
  try {
    const cpuOf = async (query: string, body: string): Promise<number> => {
      let least = Infinity;
      for (let i = 0; i < 3; i++) {
        const before = cpuNanos(runtime.pid);
        const response = await fetch(`${runtime.origin}/__bench/sign?${query}`, { method: 'POST', body });
        const text = await response.text();
        if (response.status !== 200) throw new Error(`/__bench/sign?${query}: HTTP ${response.status} ${text.slice(0, 300)}`);
        least = Math.min(least, (cpuNanos(runtime.pid) - before) / 1e6);
      }
      return least;
    };
    const N = 10;
    const userIDs = [{ name: 'bench', email: 'bench@example.com' }];
    const keys = [
      ['openpgp.js, RSA-4096 (keys generate default)', (await openpgp.generateKey({ userIDs, type: 'rsa', rsaBits: 4096, format: 'armored' })).privateKey],
      ['openpgp.js, RSA-3072', (await openpgp.generateKey({ userIDs, type: 'rsa', rsaBits: 3072, format: 'armored' })).privateKey],
      [
        'openpgp.js, EdDSA ed25519Legacy (keys generate --type ecc)',
        (await openpgp.generateKey({ userIDs, type: 'ecc', curve: 'ed25519Legacy', format: 'armored' })).privateKey,
      ],
      ['openpgp.js, ECDSA P-256', (await openpgp.generateKey({ userIDs, type: 'ecc', curve: 'nistP256', format: 'armored' })).privateKey],
    ] as const;
    for (const [name, armored] of keys) {
      await cpuOf('times=1', armored); // warm: the module and the key type's code
      rows.push({ key: name, cpuMs: Math.max(0, (await cpuOf(`times=${N}`, armored)) - (await cpuOf('times=0', armored))) / N });
      log(`signing: ${name}: ${rows.at(-1)!.cpuMs.toFixed(2)} ms`);
      // What a publish commit pays with a held key of this type (held-keys.ts's signer, made once per isolate).
      await cpuOf('via=held&times=1', armored);
      const held = Math.max(0, (await cpuOf(`via=held&times=${N}`, armored)) - (await cpuOf('via=held&times=0', armored))) / N;
      rows.push({ key: `${name.replace(/^openpgp\.js, /, '')}: as a registry-held key signs (src/store/keys/held-keys.ts)`, cpuMs: held });
      log(`signing: ${rows.at(-1)!.key}: ${held.toFixed(2)} ms`);
    }
    for (const native of ['Ed25519', 'RSA'] as const) {
      await cpuOf(`native=${native}&times=1`, '');
      rows.push({
        key: `WebCrypto ${native === 'RSA' ? 'RSASSA-PKCS1-v1_5 4096' : 'Ed25519'} (signature only)`,
        cpuMs: Math.max(0, (await cpuOf(`native=${native}&times=${N}`, '')) - (await cpuOf(`native=${native}&times=0`, ''))) / N,
      });
      log(`signing: ${rows.at(-1)!.key}: ${rows.at(-1)!.cpuMs.toFixed(2)} ms`);
    }
  } finally {
    await runtime.dispose();
  }
  return rows;
}

/** The table's lines. */
export function writeFloorTable(rows: readonly WritePathFigures[]): string[] {
  return [
    '| write path | archive | MiB | ours: Worker CPU (ms) | floor (ms) | ours per MiB | floor per MiB | ours ÷ floor | floor + native delivery to R2 and client (ms) | ours ÷ (floor + delivery) | plan (ours) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map(
      (r) =>
        `| ${r.path} | ${r.kind} | ${r.mib.toFixed(1)} | ${r.oursMs.toFixed(1)} | ${r.floorMs.toFixed(1)} | ${r.oursPerMiB.toFixed(2)} | ${r.floorPerMiB.toFixed(2)} | ${r.ratio.toFixed(2)} | ${r.floorWithDeliveryMs?.toFixed(1) ?? '—'} | ${r.ratioWithDelivery?.toFixed(2) ?? '—'} | ${r.plan.split(' ')[0]} |`,
    ),
  ];
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const json = process.argv.includes('--json');
  const given = process.argv
    .slice(2)
    .filter((a) => /^\d+$/.test(a))
    .map(Number);
  const sizes = given.length ? given : quick ? [1, 10] : [1, 10, 50, 200];
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-bench-floor-'));
  try {
    const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
    const rows = process.argv.includes('--signing-only') ? [] : await benchWriteFloor(work, sizes, log);
    const signing = process.argv.includes('--no-signing') ? [] : await benchSigning(work, log);
    console.log(
      json
        ? JSON.stringify({ writeFloor: rows, signing })
        : [
            ...writeFloorTable(rows),
            '',
            '| signature by a registry-held key | Worker CPU per signature (ms) |',
            '| --- | ---: |',
            ...signing.map((r) => `| ${r.key} | ${r.cpuMs.toFixed(2)} |`),
          ].join('\n'),
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
