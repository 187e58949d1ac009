/** The bench's targets: each figure against its target, reported as met or missed (never a failure; bench/README.md). */
import type { PublishScaleRow } from './budgets';
import type { RouteReads } from './reads';
import type { PublishApiFigures } from './publish-api';
import type { CountingFigures } from './download-counting';
import type { WritePathFigures } from './write-floor';
import type { Target } from './report';

const round = (n: number, digits = 2) => Number(n.toFixed(digits));

/**
 * Reads per request: ≤ 1 KV read on a fresh isolate (none for discovery) and none again for every document and page;
 * no R2 or KV read in a fresh isolate of a location that has a release file or immutable document; the bundle within
 * Workers Free's 3 MiB (gzip; Paid: 10 MiB).
 */
export function readTargets(reads: readonly RouteReads[], bundleGzip: number): Target[] {
  const targets: Target[] = [];
  for (const { name, immutable, file, first, again, freshIsolate } of reads) {
    if (!file) {
      const limit = name === 'discovery' ? 0 : 1;
      targets.push({ name: `${name}: KV reads, first request`, value: first.kv, target: `≤ ${limit}`, met: first.kv <= limit });
      targets.push({ name: `${name}: KV reads, again`, value: again.kv, target: '0', met: again.kv === 0 });
    }
    const fresh = freshIsolate.kv + freshIsolate.r2;
    if (immutable) targets.push({ name: `${name}: R2 + KV reads in a fresh isolate of a location that has it`, value: fresh, target: '0', met: fresh === 0 });
  }
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

/** Issue 29: every request of a small keyless publish within the Free plan's 10 ms (median over the repeats). */
export function publishApiTargets(figures: PublishApiFigures): Target[] {
  return figures.smallKeyless.perRequest.map((r) => ({
    name: `API publish, small keyless Ed25519 release: ${r.request}, Worker CPU (ms, median; Free plan ≤ 10)`,
    value: Number(r.medianMs.toFixed(1)),
    target: '≤ 10',
    met: r.medianMs <= 10,
  }));
}

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
