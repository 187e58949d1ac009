/** The soak's verdict from its samples (`analyse`: plateau, cache bound) and its printed report. */
import type { HeapFigures } from './inspector';
import type { LoadResult } from './wrk';

export interface SoakSample {
  seconds: number;
  rssMb: number;
  cpuSeconds: number;
  /** The cache's figures; null when /__bench/cache did not answer (3 tries) behind the load's 50 connections. */
  cache: { entries: number; bytes: number; maxBytes: number; evictions: number } | null;
  /** V8 heaps in workerd (null when the inspector could not be read). */
  heap: HeapFigures | null;
}

/** The soak's figures: `analyse`'s verdict, and what the soak adds after the load. */
export type SoakResult = ReturnType<typeof analyse> & {
  /** How often Miniflare's own isolates were made to collect their garbage during the load (null: never, see SoakOptions.rawHelpers). */
  helperCollections?: { everySeconds: number; count: number } | null;
  /** After the load, once every isolate has run a full garbage collection (null: no inspector). */
  afterCollection?: { rssMb: number; heap: HeapFigures } | null;
  /** The Worker's own count of answers per route and status, and the requests it never answered (null: not read). */
  routes?: RouteFigures | null;
};

export interface RouteFigures {
  statuses: Record<string, number>;
  stuck: { route: string; path: string; gzip: boolean; ageSeconds: number }[];
}

/** The RSS curve judged after the warm-up (the first fifth), the Worker heap's slope and the cache bound at every sample. */
export function analyse(connections: number, minutes: number, pathCount: number, storedBytes: number, load: LoadResult, samples: SoakSample[]) {
  const total = samples[samples.length - 1]!.seconds;
  const afterWarmup = samples.filter((s) => s.seconds >= total / 5);
  const slope = leastSquaresSlope(afterWarmup.map((s) => [s.seconds / 60, s.rssMb]));
  const mean = (list: SoakSample[]) => list.reduce((sum, s) => sum + s.rssMb, 0) / Math.max(1, list.length);
  const middle = samples.filter((s) => s.seconds >= total / 3 && s.seconds < (2 * total) / 3);
  const last = samples.filter((s) => s.seconds >= (2 * total) / 3);
  const drift = mean(last) - mean(middle);
  const windowMinutes = (total * 4) / 5 / 60;
  // Plateau: what is left of the growth after the warm-up would add less than 5% (and under 16 MB) over the window.
  const allowed = Math.min(16, 0.05 * mean(afterWarmup));
  const plateaus = slope * windowMinutes <= allowed && drift <= allowed;
  const withHeap = samples.filter((s) => s.heap !== null);
  // The Worker isolate's V8 heap size (null without inspector figures): its slope after the warm-up, like RSS's.
  const workerHeap =
    withHeap.length < 2
      ? null
      : {
          startMb: withHeap[0]!.heap!.workerTotalMb,
          endMb: withHeap[withHeap.length - 1]!.heap!.workerTotalMb,
          peakMb: Math.max(...withHeap.map((s) => s.heap!.workerTotalMb)),
          slopeMbPerMinute: leastSquaresSlope(withHeap.filter((s) => s.seconds >= total / 5).map((s) => [s.seconds / 60, s.heap!.workerTotalMb])),
        };
  const caches = samples.flatMap((s) => (s.cache ? [s.cache] : []));
  const bound = caches[0]?.maxBytes ?? 0;
  const maxBytesSeen = Math.max(0, ...caches.map((c) => c.bytes));
  return {
    minutes,
    connections,
    paths: pathCount,
    storedDocumentMb: storedBytes / 1024 / 1024,
    load,
    samples,
    rss: {
      startMb: samples[0]!.rssMb,
      afterWarmupMb: afterWarmup[0]?.rssMb ?? samples[0]!.rssMb,
      endMb: samples[samples.length - 1]!.rssMb,
      peakMb: Math.max(...samples.map((s) => s.rssMb)),
      slopeMbPerMinute: slope, // least-squares, after the warm-up (the first fifth of the run)
      lastThirdMinusMiddleThirdMb: drift, // mean RSS of the last third minus that of the middle third
      plateaus,
    },
    cache: {
      maxBytesSeen,
      bound,
      heldAtEverySample: caches.length > 0 && maxBytesSeen <= bound,
      evictions: caches[caches.length - 1]?.evictions ?? 0,
      samplesRead: caches.length,
    },
    workerHeap,
  };
}

function leastSquaresSlope(points: readonly (readonly [number, number])[]): number {
  if (points.length < 2) return 0;
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

/** The soak as printed: load, RSS curve (at most ~30 rows), plateau verdict, heaps and cache bound. */
export function report(result: SoakResult): string {
  const mb = (n: number) => n.toFixed(1);
  const { load, routes, helperCollections: collected, rss: r, afterCollection: a, workerHeap: h, cache: c } = result;
  const lines = [
    `edge-registry soak — wrk, ${result.connections} connections, ${result.minutes} min, random picks among ${result.paths} paths (${mb(result.storedDocumentMb)} MB of stored documents)`,
    `load: ${load.requests} requests, ${load.rps.toFixed(0)} req/s, p50 ${load.p50Ms} ms, p99 ${load.p99Ms} ms, ${load.non2xx} non-2xx, ${load.errors} socket errors`,
    ...(load.non200 ?? []).slice(0, 5).map((line) => `  non-200 response: ${line}`),
  ];
  if (routes) {
    const stuck = routes.stuck.slice(0, 5).map((s) => `${s.path}${s.gzip ? ' (gzip)' : ''} ${s.ageSeconds} s`);
    lines.push(
      `  answers by route and status (the Worker's count): ${Object.entries(routes.statuses)
        .map(([k, n]) => `${k}: ${n}`)
        .join(', ')}`,
      `  requests the Worker never answered (hung, or cancelled by workerd before an answer): ${routes.stuck.length}${stuck.length ? ` — ${stuck.join('; ')}` : ''}`,
    );
  }
  lines.push(
    collected
      ? `  Miniflare's own isolates (entry worker, KV/R2/cache simulators) collected their garbage every ${collected.everySeconds} s (${collected.count} times), the Worker's isolate never (--raw-helpers: leave them alone)`
      : "  Miniflare's own isolates left to V8 (--raw-helpers, or no inspector): RSS includes the native memory their uncollected garbage holds",
    '',
    '   time   RSS MB  Worker heap used/total MB  other isolates MB  cache MB  entries  evictions  CPU s',
  );
  // At most ~30 rows: every k-th sample, always the last.
  const step = Math.max(1, Math.ceil(result.samples.length / 30));
  result.samples.forEach((s, i) => {
    if (i % step !== 0 && i !== result.samples.length - 1) return;
    const bar = '#'.repeat(Math.round((s.rssMb / r.peakMb) * 40));
    const heap = s.heap ? `${mb(s.heap.workerUsedMb)} / ${mb(s.heap.workerTotalMb)}` : '—';
    lines.push(
      `${`${s.seconds.toFixed(0)} s`.padStart(7)}  ${mb(s.rssMb).padStart(7)}  ${heap.padStart(25)}  ${(s.heap ? mb(s.heap.othersTotalMb) : '—').padStart(17)}  ${(s.cache ? mb(s.cache.bytes / 1024 / 1024) : '—').padStart(8)}  ${String(s.cache?.entries ?? '—').padStart(7)}  ${String(s.cache?.evictions ?? '—').padStart(9)}  ${s.cpuSeconds.toFixed(0).padStart(5)}  ${bar}`,
    );
  });
  lines.push(
    '',
    `RSS: ${mb(r.startMb)} MB at start, ${mb(r.afterWarmupMb)} MB after the warm-up (first fifth), ${mb(r.endMb)} MB at the end, peak ${mb(r.peakMb)} MB`,
    `     slope after the warm-up ${r.slopeMbPerMinute.toFixed(2)} MB/min; last third − middle third ${r.lastThirdMinusMiddleThirdMb.toFixed(1)} MB → ${r.plateaus ? 'plateaus' : 'DOES NOT plateau'}`,
    ...(a
      ? [
          `     after the load and a full garbage collection in every isolate: RSS ${mb(a.rssMb)} MB (V8 heaps: Worker ${mb(a.heap.workerUsedMb)} used of ${mb(a.heap.workerTotalMb)} MB, others ${mb(a.heap.othersTotalMb)} MB)`,
        ]
      : []),
    ...(h
      ? [
          `Worker isolate's V8 heap: ${mb(h.startMb)} MB at start, ${mb(h.endMb)} MB at the end, peak ${mb(h.peakMb)} MB; slope after the warm-up ${h.slopeMbPerMinute.toFixed(2)} MB/min`,
        ]
      : []),
    c.samplesRead === 0
      ? 'isolate cache: its figures could not be read (/__bench/cache never answered)'
      : `isolate cache: at most ${mb(c.maxBytesSeen / 1024 / 1024)} MB counted of its ${mb(c.bound / 1024 / 1024)} MB bound in ${c.samplesRead} of ${result.samples.length} samples read → ${c.heldAtEverySample ? 'bound held' : 'BOUND EXCEEDED'}; ${c.evictions} evictions`,
  );
  return `${lines.join('\n')}\n`;
}
