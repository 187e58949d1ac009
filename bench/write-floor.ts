/**
 * `npx tsx bench/write-floor.ts [--quick] [--json] [SIZES_MIB…]` (and part of `npm run bench`): each write
 * path's Worker CPU per MiB of archive next to the runtime's native floor, measured in the same run, in
 * the same workerd, on the same bytes (bench/pull-worker.ts's /__bench endpoints):
 *
 * - floor zh: the object piped into crypto.DigestStream; floor h1: each entry piped through
 *   DecompressionStream('deflate-raw') into crypto.DigestStream; floor copy: the object piped into an R2 put;
 *   module floor: gunzip, gzip and SHA-256 of the package, all native streams;
 * - pull-through (ours): the verified copy (SHA-256 while feeding the client and the R2 put, last block held)
 *   plus the background commit's h1 (src/mirror/zip-digest.ts); its floor: zh + h1;
 * - API publish commit (ours, a zip staged in parts): whole-object SHA-256, entries, h1 and the copy to the
 *   release name, as src/store/uploads/staged.ts and src/routes/publish/provider-commit.ts do them; its
 *   floor: zh + h1 + copy. (The PUT of each part is a native R2 put: 0–5 ms, bench/publish-api.ts.)
 * - module proxy (ours): src/mirror/modules/repack.ts + SHA-256; its floor: gunzip + gzip + SHA-256.
 *
 * The Worker's CPU of each request is read from the isolate's profile (bench/worker-cpu.ts), so Miniflare's
 * R2 simulator is left out, as on Cloudflare. Zips: "stored" (incompressible, method 0) and "deflated"
 * (an executable-like 4-bit-entropy body, inflating to ~1.9× the zip), three entries each as goreleaser
 * makes them. Sizes: 1 and 10 MiB with --quick, else 1, 10, 50 and 200 MiB.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import yazl from 'yazl';
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
  /** Pull-through only: the runtime's cost of handing the bytes to two length-fixed destinations (R2, client). */
  deliveryMs?: number;
  ratioWithDelivery?: number;
}

function body(kind: 'stored' | 'deflated', bytes: number): Buffer {
  const data = randomFillSync(Buffer.alloc(bytes));
  if (kind === 'deflated') for (let i = 0; i < data.length; i++) data[i]! &= 0x0f;
  return data;
}

async function makeZip(kind: 'stored' | 'deflated', zipBytes: number): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const mtime = new Date('2026-01-01T00:00:00Z');
  // A 4-bit-entropy body deflates to ~0.53 of its size.
  zip.addBuffer(body(kind, kind === 'stored' ? zipBytes : Math.round(zipBytes / 0.53)), 'terraform-provider-big_v1.0.0', {
    compress: kind === 'deflated',
    mtime,
    mode: 0o100755,
  });
  zip.addBuffer(Buffer.from('# big\n'.repeat(200)), 'README.md', { compress: kind === 'deflated', mtime });
  zip.addBuffer(Buffer.from('Mozilla Public License 2.0\n'.repeat(400)), 'LICENSE', { compress: kind === 'deflated', mtime });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
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
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/pull-worker.ts') });
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
    const push = (path: string, kind: string, mib: number, oursMs: number, floorMs: number, deliveryMs?: number) => {
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
        ...(deliveryMs === undefined ? {} : { deliveryMs, ratioWithDelivery: oursMs / (floorMs + deliveryMs) }),
      });
      const r = rows.at(-1)!;
      log(
        `write-floor: ${path}, ${kind} ${mib.toFixed(1)} MiB: ours ${r.oursMs.toFixed(1)} ms, floor ${r.floorMs.toFixed(1)} ms (${r.ratio.toFixed(2)}×)${deliveryMs === undefined ? '' : `, + delivery ${deliveryMs.toFixed(1)} ms (${r.ratioWithDelivery!.toFixed(2)}×)`}`,
      );
    };
    for (const mib of sizes) {
      for (const kind of ['stored', 'deflated'] as const) {
        const zip = await makeZip(kind, mib * MiB);
        const key = `bench/archive.zip`; // one at a time in the isolate
        const sha = createHash('sha256').update(zip).digest('hex');
        const put = await fetch(`${runtime.origin}/__bench/object?key=${encodeURIComponent(key)}`, { method: 'PUT', body: zip });
        await put.text();
        if (put.status !== 200) throw new Error(`storing ${key}: HTTP ${put.status}`);
        const q = `key=${encodeURIComponent(key)}`;
        const size = zip.byteLength / MiB;
        // Warm the code paths once (a warm isolate, as the goals say), then measure ours and the floor interleaved.
        if (mib === sizes[0] && kind === 'stored')
          log(`write-floor: source chunks ${await (await fetch(`${runtime.origin}/__bench/cpu?what=mem-chunks&${q}`)).text()}`);
        const floorZh = await cpuOf(`/__bench/cpu?what=mem-floor-zh&${q}`);
        const floorH1 = await cpuOf(`/__bench/cpu?what=mem-floor-h1&${q}`);
        const copy = await cpuOf(`/__bench/cpu?what=mem-zh-copy&${q}&sha=${sha}`);
        const h1 = await cpuOf(`/__bench/cpu?what=mem-h1&${q}`);
        const commit = await cpuOf(`/__bench/cpu?what=mem-commit-hash&${q}`);
        const delivery = await cpuOf(`/__bench/cpu?what=mem-floor-delivery&${q}`);
        push('pull-through (copy + h1)', kind, size, copy + h1, floorZh + floorH1, delivery);
        push('API publish commit (zh + h1)', kind, size, commit, floorZh + floorH1);
      }
      const dir = join(work, `module-${mib}`);
      const tarball = makeModule(dir, mib * MiB);
      const ours = await cpuOf('/__bench/repack?times=1', { method: 'POST', body: tarball });
      const floor = await cpuOf('/__bench/floor-repack?times=1', { method: 'POST', body: tarball });
      // The POST body itself is read by both alike; per MiB of the upstream tarball.
      push('module proxy (repack + gzip + SHA-256)', 'tar.gz', tarball.byteLength / MiB, ours, floor);
    }
  } finally {
    await runtime.dispose();
  }
  return rows;
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
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/pull-worker.ts') });
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
    '| write path | archive | MiB | ours: Worker CPU (ms) | floor (ms) | ours per MiB | floor per MiB | ours ÷ floor | + native delivery to R2 and client (ms) | ours ÷ (floor + delivery) | plan (ours) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map(
      (r) =>
        `| ${r.path} | ${r.kind} | ${r.mib.toFixed(1)} | ${r.oursMs.toFixed(1)} | ${r.floorMs.toFixed(1)} | ${r.oursPerMiB.toFixed(2)} | ${r.floorPerMiB.toFixed(2)} | ${r.ratio.toFixed(2)} | ${r.deliveryMs?.toFixed(1) ?? '—'} | ${r.ratioWithDelivery?.toFixed(2) ?? '—'} | ${r.plan.split(' ')[0]} |`,
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
  const sizes = given.length ? given : quick ? [1, 10] : [1, 10, 50];
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
