/**
 * `npm run bench:budgets` (and a section of `npm run bench`): each write
 * path's storage operations per invocation at realistic sizes, beside
 * Cloudflare's limits (docs/production-rules.md), and the daily Free-plan
 * budget they leave. Every path runs the store code the Worker and the
 * scripts run, against Miniflare's local KV and R2 (scripts/lib/stores/local),
 * counted by the store-counting proxy the publish-cost figures use
 * (test/fixtures/counting-store.ts). The per-`terraform init` figures (Worker
 * requests, KV reads) come from bench/cost.ts (a real terraform init). The
 * paths that fetch from an upstream (a 100 MiB provider pulled through, a
 * vpc-shaped module proxied: subrequests, CPU and isolate memory per
 * invocation) are measured in workerd by bench/budgets-pulled.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readRegistryConfig } from '../scripts/lib/config';
import { openLocalStore } from '../scripts/lib/stores/local';
import { mapLimit } from '../src/concurrency';
import { providerAddress } from '../src/protocol/address';
import { moduleAddress } from '../src/protocol/modules-v1';
import { committedRecordKey, moduleArchiveFilename, moduleCommittedRecordKey } from '../src/store/layout';
import { changeProviderLifecycle } from '../src/store/lifecycle/providers';
import { storeMirroredVersion } from '../src/store/mirror/write';
import { rebuildModuleIndex } from '../src/store/modules/lists';
import { updateProviderLists } from '../src/store/providers/lists';
import { publishVersion, rebuildProviderIndex } from '../src/store/providers/write';
import { commitRecord } from '../src/store/records';
import type { Store } from '../src/store/store';
import { writeTokenRecord } from '../src/store/tokens/write';
import { seedModule } from '../test/fixtures/modules';
import { countingStore, type StoreCounter } from '../test/fixtures/counting-store';
import { FREE_DAILY, INVOCATION_LIMITS } from '../test/fixtures/production/rules';
import { fakeRelease } from '../test/fixtures/release';
import { SCAFFOLDING_PLATFORMS } from '../test/fixtures/goreleaser';
import { benchPulledBudgets, pulledTable } from './budgets-pulled';
import { withWebSocket } from './worker-cpu';

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

async function seedProvider(store: Store, namespace: string, type: string, versions: number, platforms = 3): Promise<void> {
  const address = providerAddress(HOST, namespace, type);
  const names = [...SCAFFOLDING_PLATFORMS].slice(0, platforms);
  await mapLimit(
    Array.from({ length: versions }, (_, i) => `0.${Math.floor(i / 100)}.${i % 100}`),
    16,
    (version) => commitRecord(store.blobs, committedRecordKey(address, version), fakeRelease(address, version, names, { archiveSize: 64 }).record),
  );
  await rebuildProviderIndex(store, address, () => {});
}

/** Measures every write path once; `log` reports progress. */
export async function benchBudgets(log: (line: string) => void = () => {}): Promise<BudgetRow[]> {
  const work = await mkdtemp(join(tmpdir(), 'edge-registry-budgets-'));
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
    await seedProvider(handle, 'big', 'thing', 1000);
    const big = providerAddress(HOST, 'big', 'thing');
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
      for (const { record, files } of synced) await storeMirroredVersion(counted, record, files);
      await rebuildProviderIndex(counted, upstream, () => {});
    });
    const pulled = fakeRelease(upstream, '2.0.0', ['linux_amd64'], { archiveSize: 64 });
    await measure('pull-through: a new version stored and listed (store part, as src/store/mirror/pull.ts)', 'Worker', async () => {
      await storeMirroredVersion(counted, pulled.record, pulled.files);
      await updateProviderLists(counted, upstream, { records: [pulled.record] });
    });

    const vpc = moduleAddress(HOST, 'big', 'vpc', 'aws');
    await mapLimit(
      Array.from({ length: 100 }, (_, i) => `0.${Math.floor(i / 10)}.${i % 10}`),
      16,
      (version) =>
        commitRecord(handle.blobs, moduleCommittedRecordKey(vpc, version), {
          address: vpc,
          version,
          filename: moduleArchiveFilename(vpc, version, 'tar.gz'),
          format: 'tar.gz',
          sha256: '0'.repeat(64),
          size: 1,
          publishedAt: new Date(0).toISOString(),
        }),
    );
    await rebuildModuleIndex(handle, vpc, () => {});
    await measure('module publish (module with 100 versions)', 'Worker', () => seedModule(counted.kv, counted.blobs, vpc, '1.0.0'));

    const token = {
      id: 'tok_bench',
      name: 'bench',
      sha256: 'a'.repeat(64),
      scopes: [],
      created: new Date(0).toISOString(),
      expires: null,
      purpose: 'read' as const,
    };
    await measure('token create / sign-in (the token record)', 'Worker', () => writeTokenRecord(counted.kv, token as never));
  } finally {
    await handle.close();
    await rm(work, { recursive: true, force: true });
  }
  return rows;
}

/** The budgets table, with each plan's per-invocation limit beside each Worker path. */
export function budgetsTable(rows: readonly BudgetRow[]): string {
  const limit = INVOCATION_LIMITS.free.storageOperations;
  return textTable(
    [
      'write path',
      'runs in',
      'KV reads',
      'KV writes',
      'KV deletes',
      'KV lists',
      'R2 class A',
      'R2 class B',
      'storage ops',
      'of 1,000/invocation',
      'a day on Free',
    ],
    rows.map((r) => [
      r.path,
      r.runs,
      String(r.kvReads),
      String(r.kvWrites),
      String(r.kvDeletes),
      String(r.kvLists),
      String(r.r2ClassA),
      String(r.r2ClassB),
      String(r.storageOperations),
      r.runs === 'Worker' ? `${Math.round((100 * r.storageOperations) / limit)} %${r.storageOperations > limit ? ' OVER' : ''}` : 'n/a (CLI)',
      String(r.perDayOnFree),
    ]),
  );
}

/** Columns padded to their widest cell: the first left-aligned, the others right-aligned. */
function textTable(head: string[], body: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), ...body.map(line)].join('\n');
}

// `npm run bench:budgets [-- --only writes|pulled] [-- --json]`: the write paths' budgets (above) and the pulled paths'
// (bench/budgets-pulled.ts: a 100 MiB provider pulled through, a vpc-shaped module proxied; CPU and heap through
// workerd's inspector, which needs a global WebSocket: Node 20 is restarted with --experimental-websocket).
if (import.meta.url === `file://${process.argv[1]}`) {
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  const log = (line: string) => process.stderr.write(`${line}\n`);
  if (only !== 'writes') await withWebSocket();
  const rows = only === 'pulled' ? [] : await benchBudgets(log);
  const pulled = only === 'writes' ? [] : await benchPulledBudgets(log);
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify({ writes: rows, pulled }, null, 2)}\n`);
  else {
    if (rows.length) process.stdout.write(`${budgetsTable(rows)}\n\n`);
    if (pulled.length) process.stdout.write(`${pulledTable(pulled)}\n`);
  }
}
