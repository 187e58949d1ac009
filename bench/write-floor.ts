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
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { build } from './build';
import { leastCpuMs, startRuntime } from './runtime';
import { benchSigning } from './signing';
import { planFor } from './worker-cpu';
import { makeModule, zipLayout } from './floor-archives';
import { flag, markdownTable, script } from './report';

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

/** Measures every path at every size; `work` is a scratch directory. */
export async function benchWriteFloor(work: string, sizes: number[], log: (line: string) => void = () => {}): Promise<WritePathFigures[]> {
  const runtime = await startRuntime({ bundlePath: await build(work, 'bench/bench-worker.ts') });
  const sink = await discardServer();
  const rows: WritePathFigures[] = [];
  try {
    const cpuOf = (url: string, init?: RequestInit) => leastCpuMs(runtime, url, init);
    const push = (path: string, kind: string, mib: number, oursMs: number, floorMs: number, floorWithDeliveryMs?: number) => {
      const delivery = floorWithDeliveryMs === undefined ? {} : { floorWithDeliveryMs, ratioWithDelivery: oursMs / floorWithDeliveryMs };
      const perMiB = { oursPerMiB: oursMs / mib, floorPerMiB: floorMs / mib, ratio: floorMs > 0 ? oursMs / floorMs : NaN };
      rows.push({ path, kind, mib, oursMs, floorMs, ...perMiB, plan: planFor(oursMs), ...delivery });
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

// `npx tsx bench/write-floor.ts [--quick] [--json] [--no-signing | --signing-only] [SIZES_MIB…]`
await script(import.meta, 'floor', async (work) => {
  const given = process.argv
    .slice(2)
    .filter((a) => /^\d+$/.test(a))
    .map(Number);
  const sizes = given.length ? given : flag('quick') ? [1, 10] : [1, 10, 50, 200];
  const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
  const rows = flag('signing-only') ? [] : await benchWriteFloor(work, sizes, log);
  const signing = flag('no-signing') ? [] : await benchSigning(work, log);
  const signingTable = markdownTable(
    ['signature by a registry-held key', 'Worker CPU (ms)'],
    signing.map((r) => [r.key, r.cpuMs.toFixed(2)]),
  );
  const tables = [...(rows.length ? writeFloorTable(rows) : []), ...(signing.length ? ['', signingTable] : [])];
  console.log(flag('json') ? JSON.stringify({ writeFloor: rows, signing }) : tables.join('\n'));
});
