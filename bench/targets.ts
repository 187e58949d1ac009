/**
 * The bench's targets and the medians they are judged on: each figure against
 * its target, reported as met or missed (never a failure; see bench/README.md).
 */
import type { LoadResult } from './wrk';
import type { PublishFigures } from './publish';
import type { PublishScaleRow } from './publish-scale';
import type { EdgeCacheFigures } from './edge-cache';
import type { PublishApiFigures } from './publish-api';
import type { CountingFigures } from './download-counting';
import type { WritePathFigures } from './write-floor';

export interface RouteFigures extends LoadResult {
  name: string;
  path: string;
  bytes: number;
  cpuMicrosPerRequest: number;
}

export interface Target {
  name: string;
  value: number;
  target: string;
  met: boolean;
  /** Why the figure may not mean what it says (e.g. the floor's own p99 was unstable). */
  note?: string;
}

/** The floor's p99 in each run: the comparisons use the median; over 2× between runs, p99 ratios are noise. */
export interface FloorP99 {
  runsMs: number[];
  medianMs: number;
  /** Largest ÷ smallest p99 between runs. */
  spread: number;
  unstable: boolean;
}

export function evaluate(
  floor: RouteFigures,
  floorP99: FloorP99,
  small: RouteFigures[],
  large: RouteFigures[],
  kvReads: { name: string; first: number; cached: number }[],
  archive: { rssGrowthMb: number },
  publish: PublishFigures,
  bundleGzip: number,
): Target[] {
  const targets: Target[] = [];
  const round = (n: number, digits = 2) => Number(n.toFixed(digits));
  for (const route of small) {
    const rps = route.rps / floor.rps;
    const p99 = route.p99Ms / floor.p99Ms;
    targets.push({ name: `${route.name}: req/s ÷ floor`, value: round(rps), target: '≥ 0.8', met: rps >= 0.8 });
    // Both are medians of the interleaved runs (3; 1 with --quick): one run's p99 swings with a few starved connections.
    const note = floorP99.unstable
      ? `the floor's own p99 varied ${floorP99.spread.toFixed(1)}× between runs: noise`
      : floorP99.runsMs.length < 3
        ? 'one run (--quick), not a median of three'
        : undefined;
    targets.push({ name: `${route.name}: median p99 ÷ floor's median p99`, value: round(p99), target: '≤ 2', met: p99 <= 2, ...(note ? { note } : {}) });
  }
  for (const route of large) {
    const base = small.find((s) => s.name === route.name)!;
    // Mean latency (connections ÷ req/s): wrk's percentiles here swing ±50% between identical runs
    // (a few starved connections), the throughput does not.
    const ratio = route.meanMs / base.meanMs;
    targets.push({ name: `${route.name}: mean latency at 1,000 versions ÷ at 1`, value: round(ratio), target: '≤ 1.2', met: ratio <= 1.2 });
  }
  for (const { name, first, cached } of kvReads) {
    const limit = name === 'discovery' ? 0 : 1;
    targets.push({ name: `${name}: KV reads, first request`, value: first, target: `≤ ${limit}`, met: first <= limit });
    targets.push({ name: `${name}: KV reads, cached`, value: cached, target: '0', met: cached === 0 });
  }
  targets.push({ name: 'archive 200 MB: workerd RSS growth (MB)', value: round(archive.rssGrowthMb, 1), target: '≤ 64', met: archive.rssGrowthMb <= 64 });
  // h1 needs every entry inflated, so its floor is inflating + hashing in one Node thread, not sha256sum.
  const hashing = publish.hashing.mbPerSecond / publish.hashing.floorMbPerSecond;
  targets.push({
    name: 'publish hashing (zh + h1, inspectArchive) ÷ floor (inflate + SHA-256 in one Node thread)',
    value: round(hashing),
    target: '≥ 0.8',
    met: hashing >= 0.8,
  });
  const zh = publish.hashing.sha256FileMbPerSecond / publish.hashing.sha256sumMbPerSecond;
  targets.push({ name: 'publish hashing (zh alone, sha256File) ÷ sha256sum', value: round(zh), target: '≥ 0.8', met: zh >= 0.8 });
  // Cloudflare's limit for a Worker on the Free plan (3 MiB compressed; Paid: 10 MiB). The first target, 64 KiB,
  // predates the Worker signing and verifying OpenPGP itself (openpgp is ~560 KiB of the unminified bundle).
  targets.push({ name: 'bundle gzip (KiB), Workers Free limit', value: round(bundleGzip / 1024, 1), target: '≤ 3072', met: bundleGzip <= 3 * 1024 * 1024 });
  return targets;
}

/** A publish costs the same however many versions the provider has: wall time within 1.5× and the same storage requests. */
export function publishScaleTargets(rows: readonly PublishScaleRow[]): Target[] {
  const first = rows[0]!;
  return rows.slice(1).flatMap((r) => [
    {
      name: `publish wall time at ${r.existingVersions} existing versions ÷ at ${first.existingVersions}`,
      value: Number((r.seconds / first.seconds).toFixed(2)),
      target: '≤ 1.5',
      met: r.seconds / first.seconds <= 1.5,
    },
    {
      name: `publish storage requests at ${r.existingVersions} existing versions − at ${first.existingVersions}`,
      value: r.requests - first.requests,
      target: '0',
      met: r.requests === first.requests,
    },
  ]);
}

/** Every release file and immutable document: no R2 or KV read in a fresh isolate once its location has it. */
export function edgeCacheTargets(figures: EdgeCacheFigures): Target[] {
  return figures.reads
    .filter((r) => !r.name.endsWith('(list)'))
    .map((r) => ({
      name: `${r.name}: R2 + KV reads in a fresh isolate of a location that has it`,
      value: r.freshIsolate.kv + r.freshIsolate.r2,
      target: '0',
      met: r.freshIsolate.kv + r.freshIsolate.r2 === 0,
    }));
}

/** An API publish of a 3-platform version takes under a second, at 1 and at 200 existing versions. */
export function publishApiTargets(figures: PublishApiFigures): Target[] {
  const wall = figures.wall.map((w) => ({
    name: `API publish, 3 platforms, into a provider with ${w.versionsAfter} version(s): wall time (s)`,
    value: Number(w.seconds.toFixed(2)),
    target: '< 1',
    met: w.seconds < 1,
  }));
  // Issue 29: every request of a small keyless publish within the Free plan's 10 ms (median over the repeats).
  const perRequest = (figures.smallKeyless?.perRequest ?? []).map((r) => ({
    name: `API publish, small keyless Ed25519 release: ${r.request}, Worker CPU (ms, median; Free plan ≤ 10)`,
    value: Number(r.medianMs.toFixed(1)),
    target: '≤ 10',
    met: r.medianMs <= 10,
  }));
  return [...wall, ...perRequest];
}

const round = (n: number, digits = 2) => Number(n.toFixed(digits));

/**
 * Issue 29: each write path's Worker CPU within 1.5× of the runtime's native floor for the same bytes. Where
 * the floor leaves out work the path cannot skip (pull-through hands every byte to R2 and to the client), the
 * note gives the measured reason: that delivery's own native cost, and ours against the floor with it.
 */
export function writeFloorTargets(rows: readonly WritePathFigures[]): Target[] {
  return rows.map((r) => {
    const target: Target = {
      name: `${r.path}, ${r.kind} ${r.mib.toFixed(0)} MiB: Worker CPU ÷ the native floor (${r.oursPerMiB.toFixed(1)} ms/MiB; ${r.plan.split(' ')[0]})`,
      value: round(r.ratio),
      target: '≤ 1.5',
      met: r.ratio <= 1.5,
    };
    if (!target.met && r.floorWithDeliveryMs !== undefined) {
      const delivery = (r.floorWithDeliveryMs - r.floorMs) / r.mib;
      target.note = `the runtime's own native delivery to R2 and the client costs ${delivery.toFixed(1)} ms/MiB (${round(delivery / r.floorPerMiB)}× the floor's ${r.floorPerMiB.toFixed(1)}), so no copy can be within 1.5×; ours ÷ (floor + that delivery) = ${round(r.ratioWithDelivery!)}`;
    }
    return target;
  });
}

/** Every download under load is counted, none twice. */
export function countingTargets(figures: CountingFigures): Target[] {
  const { counted, downloads } = figures.load;
  return [{ name: 'download counting: exact under load (counted − downloaded)', value: counted - downloads, target: '0', met: counted === downloads }];
}

export function floorP99Of(runs: readonly RouteFigures[]): FloorP99 {
  const runsMs = runs.map((r) => r.p99Ms);
  const sorted = [...runsMs].sort((a, b) => a - b);
  const spread = sorted[sorted.length - 1]! / Math.max(sorted[0]!, 1e-9);
  return { runsMs, medianMs: sorted[Math.floor(sorted.length / 2)]!, spread, unstable: runs.length > 1 && spread > 2 };
}

/** Per-field median of repeated runs of one route. */
export function median(runs: RouteFigures[]): RouteFigures {
  const mid = <K extends keyof RouteFigures>(key: K) => {
    const values = runs.map((r) => r[key] as number).sort((a, b) => a - b);
    return values[Math.floor(values.length / 2)]!;
  };
  return {
    ...runs[0]!,
    requests: runs.reduce((sum, r) => sum + r.requests, 0),
    rps: mid('rps'),
    meanMs: mid('meanMs'),
    p50Ms: mid('p50Ms'),
    p99Ms: mid('p99Ms'),
    cpuMicrosPerRequest: mid('cpuMicrosPerRequest'),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
  };
}
