/**
 * `npm run bench:budgets` (and a section of `npm run bench`): each write path's storage operations per invocation at
 * realistic sizes, beside Cloudflare's limits (docs/production-rules.md), and the daily Free-plan budget they leave.
 * Every path runs the store code the Worker and the scripts run, against Miniflare's local KV and R2
 * (scripts/lib/stores/local), counted by the store-counting proxy the publish-cost figures use
 * (test/fixtures/counting-store.ts). The per-`terraform init` figures (Worker requests, KV reads) come from
 * bench/cost.ts (a real terraform init). The paths that fetch from an upstream (a 100 MiB provider pulled through, a
 * vpc-shaped module proxied: subrequests, CPU and isolate memory per invocation) are measured in workerd by
 * bench/budgets-pulled.ts.
 */
import { join } from 'node:path';
import { readRegistryConfig } from '../scripts/lib/config';
import { openLocalStore } from '../scripts/lib/stores/local';
import { providerAddress } from '../src/protocol/address';
import { moduleAddress } from '../src/protocol/modules-v1';
import { changeProviderLifecycle } from '../src/store/lifecycle/providers';
import { storeMirroredVersion } from '../src/store/mirror/write';
import { versionsDocumentRoom } from '../src/store/value-limits';
import { updateProviderLists } from '../src/store/providers/lists';
import { publishVersion, rebuildProviderIndex } from '../src/store/providers/write';
import { seedModuleRecords, seedProviderRecords } from './seed';
import { flag, log, median, option, script, textTable } from './report';
import { writeTokenRecord } from '../src/store/tokens/write';
import { seedModule } from '../test/fixtures/modules';
import { countingStore, type StoreCounter, type StoreOperation } from '../test/fixtures/counting-store';
import { FREE_DAILY, INVOCATION_LIMITS } from '../test/fixtures/production/rules';
import { fakeRelease } from '../test/fixtures/release';
import { SCAFFOLDING_PLATFORMS } from '../test/fixtures/goreleaser';
import { benchPulledBudgets, pulledTable } from './budgets-pulled';

const HOST = 'registry.example.com';

export interface BudgetRow {
  path: string;
  /** Where it runs: a Worker invocation (limited per invocation) or the CLI (KV and R2 APIs: only daily limits). */
  runs: 'Worker' | 'CLI';
  kvReads: number;
  kvWrites: number;
  kvDeletes: number;
  kvLists: number;
  r2ClassA: number;
  r2ClassB: number;
  /** KV and R2 operations (the per-invocation limit counts these). */
  storageOperations: number;
  /** How many of these fit in a day of Free KV writes (1,000). */
  perDayOnFree: number;
}

function rowOf(path: string, runs: BudgetRow['runs'], counter: StoreCounter): BudgetRow {
  const by = counter.byOperation();
  const kvWrites = by['kv.put'] ?? 0;
  const kvDeletes = by['kv.delete'] ?? 0;
  return {
    path,
    runs,
    kvReads: by['kv.get'] ?? 0,
    kvWrites,
    kvDeletes,
    kvLists: by['kv.list'] ?? 0,
    r2ClassA: (by['r2.put'] ?? 0) + (by['r2.list'] ?? 0),
    r2ClassB: (by['r2.get'] ?? 0) + (by['r2.head'] ?? 0),
    storageOperations: counter.requests.length,
    perDayOnFree: Math.floor(FREE_DAILY.kvWrites / Math.max(1, kvWrites, kvDeletes)),
  };
}

/** Measures every write path once; `log` reports progress. */
export async function benchBudgets(work: string, log: (line: string) => void = () => {}): Promise<BudgetRow[]> {
  const handle = await openLocalStore(await readRegistryConfig({ persistTo: join(work, 'state') }));
  const rows: BudgetRow[] = [];
  try {
    const counted = countingStore(handle);
    const measure = async (path: string, runs: BudgetRow['runs'], work: () => Promise<unknown>) => {
      counted.counter.reset();
      await work();
      rows.push(rowOf(path, runs, counted.counter));
      log(`budgets: ${path}: ${counted.counter.requests.length} storage operations`);
    };

    log('budgets: seeding a provider with 1,000 versions');
    const big = providerAddress(HOST, 'big', 'thing');
    await seedProviderRecords(handle, big, 1000, SCAFFOLDING_PLATFORMS.slice(0, 3));
    const release = fakeRelease(big, '9.0.0', [...SCAFFOLDING_PLATFORMS], { archiveSize: 256 });
    await measure('publish a 13-platform release (the scaffolding goreleaser targets; provider with 1,000 versions; the commit)', 'Worker', () =>
      publishVersion(counted, release.record, release.files),
    );
    await measure('deprecate a version (provider with 1,000 versions)', 'Worker', () =>
      changeProviderLifecycle(counted, big, { kind: 'deprecate', version: '0.0.1', message: 'use 9.0.0' }),
    );

    const upstream = providerAddress('upstream.example.com', 'sync', 'big');
    const synced = Array.from({ length: 50 }, (_, i) => fakeRelease(upstream, `1.${i}.0`, SCAFFOLDING_PLATFORMS.slice(0, 6), { archiveSize: 64 }));
    await measure('mirror sync of 50 versions × 6 platforms (one provider)', 'CLI', async () => {
      // As scripts/lib/mirror/sync.ts: one versions-document room for the provider (1 KV read for the 50 versions).
      const room = versionsDocumentRoom(counted.kv, upstream);
      for (const { record, files } of synced) await storeMirroredVersion(counted, record, files, () => {}, undefined, room);
      await rebuildProviderIndex(counted, upstream, () => {});
    });
    const pulled = fakeRelease(upstream, '2.0.0', ['linux_amd64'], { archiveSize: 64 });
    await measure('pull-through: a new version stored and listed (store part, as src/store/mirror/pull.ts)', 'Worker', async () => {
      await storeMirroredVersion(counted, pulled.record, pulled.files);
      await updateProviderLists(counted, upstream, { records: [pulled.record] });
    });

    const vpc = moduleAddress(HOST, 'big', 'vpc', 'aws');
    await seedModuleRecords(handle, vpc, 100);
    await measure('module publish (module with 100 versions)', 'Worker', () => seedModule(counted.kv, counted.blobs, vpc, '1.0.0'));

    const created = new Date(0).toISOString();
    const token = { id: 'tok_bench', name: 'bench', sha256: 'a'.repeat(64), scopes: [], created, expires: null, purpose: 'read' } as const;
    await measure('token create / sign-in (the token record)', 'Worker', () => writeTokenRecord(counted.kv, { ...token, scopes: [] }));
  } finally {
    await handle.close();
  }
  return rows;
}

/** A publish's storage work at one size of history: wall time (median of the publishes) and the first publish's requests. */
export interface PublishScaleRow {
  existingVersions: number;
  seconds: number;
  requests: number;
  byOperation: Partial<Record<StoreOperation, number>>;
  /** Keys read more than once by the publish. */
  repeatedReads: number;
}

/**
 * What a publish costs as the package's history grows: a provider (or, `modules`, a module) with N existing
 * versions (committed records, the lists built once), then `publishes` publishes of a new version through the store
 * code the Worker's commit runs (publishVersion of a 3-platform release; a module's publish), every KV and R2
 * request counted (test/fixtures/counting-store.ts). `SCALE_TRACE=1` prints every request of the first.
 */
export async function benchPublishScale(
  work: string,
  sizes: readonly number[],
  publishes: number,
  log: (line: string) => void,
  modules = false,
): Promise<PublishScaleRow[]> {
  const rows: PublishScaleRow[] = [];
  for (const size of sizes) {
    const handle = await openLocalStore(await readRegistryConfig({ persistTo: join(work, `scale-${modules ? 'module' : 'provider'}-${size}`) }));
    try {
      const provider = providerAddress(HOST, 'scale', 'thing');
      const module = moduleAddress(HOST, 'scale', 'net', 'aws');
      await (modules ? seedModuleRecords(handle, module, size) : seedProviderRecords(handle, provider, size, SCAFFOLDING_PLATFORMS.slice(0, 3)));
      const counted = countingStore(handle);
      const times: number[] = [];
      for (let i = 0; i < publishes; i++) {
        const release = fakeRelease(provider, `1.0.${i}`, SCAFFOLDING_PLATFORMS.slice(0, 3));
        counted.counter.reset();
        const t0 = process.hrtime.bigint();
        await (modules ? seedModule(counted.kv, counted.blobs, module, `1.0.${i}`) : publishVersion(counted, release.record, release.files));
        times.push(Number(process.hrtime.bigint() - t0) / 1e9);
        if (i > 0) continue;
        const { requests } = counted.counter;
        if (process.env.SCALE_TRACE) for (const r of requests) process.stderr.write(`  ${r.op} ${r.key}\n`);
        rows.push({
          existingVersions: size,
          seconds: 0,
          requests: requests.length,
          byOperation: counted.counter.byOperation(),
          repeatedReads: counted.counter.repeatedReads().size,
        });
      }
      const row = rows.at(-1)!;
      row.seconds = median(times);
      log(
        `publish scale (${modules ? 'module' : 'provider'}): ${size} versions: ${row.seconds.toFixed(2)} s, ${row.requests} storage requests ${JSON.stringify(row.byOperation)}`,
      );
    } finally {
      await handle.close();
    }
  }
  return rows;
}

/** The budgets table, with each plan's per-invocation limit beside each Worker path. */
export function budgetsTable(rows: readonly BudgetRow[]): string {
  const limit = INVOCATION_LIMITS.free.storageOperations;
  const share = (r: BudgetRow) => `${Math.round((100 * r.storageOperations) / limit)} %${r.storageOperations > limit ? ' OVER' : ''}`;
  return textTable(
    'write path|runs in|KV reads|KV writes|KV deletes|KV lists|R2 class A|R2 class B|storage ops|of 1,000/invocation|a day on Free'.split('|'),
    rows.map((r) => [
      ...[r.path, r.runs, ...[r.kvReads, r.kvWrites, r.kvDeletes, r.kvLists, r.r2ClassA, r.r2ClassB, r.storageOperations].map(String)],
      ...[r.runs === 'Worker' ? share(r) : 'n/a (CLI)', String(r.perDayOnFree)],
    ]),
  );
}

// `npm run bench:budgets [-- --only writes|pulled] [-- --json]`: the write paths' budgets (above) and the pulled paths'
// (bench/budgets-pulled.ts: a 100 MiB provider pulled through, a vpc-shaped module proxied; CPU and heap through
// workerd's inspector, which needs a global WebSocket: Node 20 is restarted with --experimental-websocket).
// `npx tsx bench/budgets.ts --scale [--modules] [SIZES…]`: a publish as history grows, the rows as JSON.
const only = option('only');
await script(
  import.meta,
  'budgets',
  async (work) => {
    if (flag('scale')) {
      const given = process.argv
        .slice(2)
        .map(Number)
        .filter((n) => n > 0);
      return console.log(JSON.stringify(await benchPublishScale(work, given.length ? given : [1, 100, 1000], 3, log, flag('modules')), null, 1));
    }
    const rows = only === 'pulled' ? [] : await benchBudgets(work, log);
    const pulled = only === 'writes' ? [] : await benchPulledBudgets(work, log);
    if (flag('json')) process.stdout.write(`${JSON.stringify({ writes: rows, pulled }, null, 2)}\n`);
    else process.stdout.write(`${[rows.length ? budgetsTable(rows) : '', pulled.length ? pulledTable(pulled) : ''].filter(Boolean).join('\n\n')}\n`);
  },
  { inspector: only !== 'writes' && !flag('scale') },
);
