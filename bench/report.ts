/** The bench's printed table (`npm run bench`) and the shape of its `--json` result. */
import type { ModulePublishFigures } from './publish-module';
import type { PublishFigures } from './publish';
import type { PublishScaleRow } from './publish-scale';
import type { EdgeCacheFigures } from './edge-cache';
import { costTable, type CostFigures } from './cost';
import { countingTable, type CountingFigures } from './download-counting';
import { publishApiTable, type PublishApiFigures } from './publish-api';
import type { SigningFigures } from './held-key-signing';
import { writeFloorTable, type WritePathFigures } from './write-floor';
import type { FloorP99, RouteFigures, Target } from './targets';

export function round1(n: number | null): number | null {
  return n === null ? null : Math.round(n * 10) / 10;
}

export function strip(route: RouteFigures) {
  return {
    name: route.name,
    path: route.path,
    bytes: route.bytes,
    requests: route.requests,
    rps: Math.round(route.rps),
    meanMs: route.meanMs,
    p50Ms: route.p50Ms,
    p99Ms: route.p99Ms,
    cpuMicrosPerRequest: Math.round(route.cpuMicrosPerRequest),
    non2xx: route.non2xx,
    errors: route.errors,
  };
}

export type Row = ReturnType<typeof strip> & { workerJsMicrosPerRequest: number | null };

export type Result = {
  machine: { cpus: number; loadAverageAtStart: number; loadAverageAtEnd: number };
  settings: { connections: number; secondsPerRun: number; rounds: number; quick: boolean };
  floor: Row;
  floorP99: FloorP99;
  routes: (Row & { rpsRatioToFloor: number; p99RatioToFloor: number })[];
  routes1000Versions: (Row & { meanRatioTo1Version: number; p50RatioTo1Version: number; p99RatioTo1Version: number; rpsRatioToFloor: number })[];
  kvReads: { name: string; first: number; cached: number }[];
  archive: { seconds: number; mbPerSecond: number; rssGrowthMb: number; baselineRssMb: number };
  edgeCache: EdgeCacheFigures;
  publish: PublishFigures;
  publishScale: PublishScaleRow[];
  modulePublish: ModulePublishFigures;
  downloadCounting: CountingFigures;
  publishApi: PublishApiFigures;
  writeFloor: { paths: WritePathFigures[]; signing: SigningFigures[] };
  bundle: { gzipBytes: number };
  cost: CostFigures;
  targets: Target[];
  seconds: number;
};

export function table(result: Result): string {
  const lines: string[] = [];
  const pad = (cells: (string | number)[], widths: number[]) => cells.map((c, i) => String(c)[i === 0 ? 'padEnd' : 'padStart'](widths[i]!)).join('  ');
  const widths = [27, 7, 7, 8, 7, 8, 11, 7, 9];
  lines.push(
    `edge-registry bench — wrk, ${result.settings.connections} connections, ${result.settings.secondsPerRun} s per run, median of ${result.settings.rounds} interleaved round(s)${result.settings.quick ? ' (quick)' : ''}`,
  );
  lines.push(
    `machine: ${result.machine.cpus} CPUs, load average ${result.machine.loadAverageAtStart.toFixed(2)} at start, ${result.machine.loadAverageAtEnd.toFixed(2)} at end${result.machine.loadAverageAtStart > result.machine.cpus / 2 ? ' — busy: figures are low and noisy' : ''}`,
  );
  lines.push('');
  lines.push(pad(['route (1 version × 12)', 'bytes', 'req/s', 'mean ms', 'p50 ms', 'p99 ms', 'workerd CPU', 'JS µs', 'rps÷floor'], widths));
  const row = (r: Row, ratio: string) =>
    pad(
      [
        r.name,
        r.bytes,
        r.rps,
        r.meanMs.toFixed(2),
        r.p50Ms.toFixed(2),
        r.p99Ms.toFixed(2),
        `${r.cpuMicrosPerRequest} µs`,
        r.workerJsMicrosPerRequest ?? '—',
        ratio,
      ],
      widths,
    );
  lines.push(row(result.floor, '1.00'));
  for (const r of result.routes) lines.push(row(r, r.rpsRatioToFloor.toFixed(2)));
  lines.push('');
  lines.push(pad(['route (1,000 versions × 12)', 'bytes', 'req/s', 'mean ms', 'p50 ms', 'p99 ms', 'workerd CPU', 'JS µs', 'mean÷1v'], widths));
  for (const r of result.routes1000Versions) lines.push(row(r, r.meanRatioTo1Version.toFixed(2)));
  lines.push(
    "workerd CPU: process CPU time ÷ requests under load; JS µs: the Worker's own JavaScript per request, in-isolate loop (— in --quick for 1,000 versions)",
  );
  lines.push('');
  lines.push(`KV reads per request (first / cached): ${result.kvReads.map((k) => `${k.name} ${k.first}/${k.cached}`).join(', ')}`);
  lines.push(`publish-module (local): ${result.modulePublish.sizes.map((m) => `${m.mb} MB module ${m.seconds.toFixed(2)} s`).join(', ')}`);
  lines.push(
    `archive 200 MB: ${result.archive.mbPerSecond.toFixed(0)} MB/s (${result.archive.seconds.toFixed(2)} s), workerd RSS +${result.archive.rssGrowthMb.toFixed(1)} MB over ${result.archive.baselineRssMb.toFixed(0)} MB`,
  );
  const e = result.edgeCache;
  const fmt = (r: { kv: number; r2: number }) => `${r.r2}/${r.kv}`;
  lines.push(
    `edge cache, R2/KV reads per request — first in the location; again, same isolate; fresh isolate: ${e.reads.map((r) => `${r.name} ${fmt(r.first)}; ${fmt(r.sameIsolate)}; ${fmt(r.freshIsolate)}`).join(' | ')}`,
  );
  lines.push(
    `edge cache, archive ${e.archive.mb} MB: from R2 ${e.archive.fromR2MbPerSecond.toFixed(0)} MB/s, from the cache ${e.archive.fromCacheMbPerSecond.toFixed(0)} MB/s (fresh isolate ${e.archive.fromCacheFreshIsolateMbPerSecond.toFixed(0)} MB/s)`,
  );
  const p = result.publish;
  lines.push(
    `publish hashing (${p.hashing.fileMb} MB provider-like zip): ${p.hashing.function} ${p.hashing.mbPerSecond.toFixed(0)} MB/s, floor (inflate + SHA-256, one thread) ${p.hashing.floorMbPerSecond.toFixed(0)} MB/s, sha256sum ${p.hashing.sha256sumMbPerSecond.toFixed(0)} MB/s; zh alone (sha256File) ${p.hashing.sha256FileMbPerSecond.toFixed(0)} MB/s${p.hashing.unzipPipeMbPerSecond === null ? '' : `; unzip -p | sha256sum ${p.hashing.unzipPipeMbPerSecond.toFixed(0)} MB/s`}`,
  );
  lines.push(
    `local publish of 3 × 50 MB archives: ${p.localPublishSeconds.toFixed(2)} s (read + hash + sign ${p.readAndHashSeconds.toFixed(2)} s, writes to local R2/KV ${p.writeSeconds.toFixed(2)} s)`,
  );
  lines.push(
    `publish of a 3-platform version (small zips) into a provider with N versions: ${result.publishScale.map((r) => `N = ${r.existingVersions}: ${r.seconds.toFixed(2)} s, ${r.requests} storage requests`).join('; ')}`,
  );
  lines.push(...countingTable(result.downloadCounting), ...publishApiTable(result.publishApi));
  lines.push('', "write paths, Worker CPU per MiB against the runtime's native floor (bench/write-floor.ts):", ...writeFloorTable(result.writeFloor.paths));
  lines.push('signature by a registry-held key, Worker CPU: ' + result.writeFloor.signing.map((r) => `${r.key} ${r.cpuMs.toFixed(2)} ms`).join('; '));
  lines.push(`bundle: ${(result.bundle.gzipBytes / 1024).toFixed(1)} KiB gzip`);
  lines.push('', ...costTable(result.cost));
  lines.push('');
  lines.push('targets');
  for (const t of result.targets) lines.push(`  ${t.met ? 'met    ' : 'MISSED '}  ${t.name}: ${t.value} (target ${t.target})${t.note ? ` — ${t.note}` : ''}`);
  const f = result.floorP99;
  lines.push(
    `  floor p99 per run: ${f.runsMs.join(', ')} ms (median ${f.medianMs} ms, spread ${f.spread.toFixed(1)}×)${f.unstable ? ' — varied more than 2× between runs: the p99 ratios above are noise, not a regression' : ''}`,
  );
  lines.push('');
  lines.push(`total ${result.seconds.toFixed(0)} s`);
  return `${lines.join('\n')}\n`;
}
