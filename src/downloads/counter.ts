import { DurableObject } from 'cloudflare:workers';

/**
 * Download counts of one provider or one module: a SQLite-backed Durable
 * Object (available on the Workers Free plan), one instance per provider or
 * module (named by counterName, src/downloads/names.ts), so counting never
 * writes KV and never funnels every download through one object.
 *
 * Rows: (day UTC, version, platform) → count; platform is '' for a module.
 * The Worker sends increments in batches (src/downloads/count.ts): one `add`
 * is one request to this object and one transaction of UPSERTs (one row
 * written per distinct (version, platform) in the batch). Rows older than
 * RETENTION_DAYS are deleted once a day.
 */

/** One increment: version, platform ('' for modules), how many. */
export type Increment = [version: string, platform: string, count: number];

/** SQLite rows one call read and wrote (Durable Object storage's billing units). */
export interface StorageOps {
  rowsRead: number;
  rowsWritten: number;
}

/** What `totals` answers: per version and platform, and per day, within the window. */
export interface DownloadTotals {
  /** First day counted (UTC, YYYY-MM-DD). */
  since: string;
  rows: { version: string; platform: string; count: number }[];
  daily: { day: string; count: number }[];
}

const RETENTION_DAYS = 400;

// Env is not named here (src/env.ts names this class): the counter reads no binding.
export class DownloadCounter extends DurableObject<unknown> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS downloads (
      day TEXT NOT NULL, version TEXT NOT NULL, platform TEXT NOT NULL, count INTEGER NOT NULL,
      PRIMARY KEY (day, version, platform)) WITHOUT ROWID`);
    this.sql.exec('CREATE TABLE IF NOT EXISTS pruned (day TEXT NOT NULL)');
  }

  /**
   * Adds `increments` to `day` (YYYY-MM-DD, UTC) in one transaction and
   * answers the SQLite rows it read and wrote (what Durable Object storage
   * bills; `npm run bench` reports them). Ignores malformed entries (the
   * Worker sends only its own).
   */
  add(day: string, increments: Increment[]): StorageOps {
    const ops: StorageOps = { rowsRead: 0, rowsWritten: 0 };
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return ops;
    const tally = (cursor: SqlStorageCursor<Record<string, SqlStorageValue>>) => {
      cursor.toArray();
      ops.rowsRead += cursor.rowsRead;
      ops.rowsWritten += cursor.rowsWritten;
    };
    this.ctx.storage.transactionSync(() => {
      for (const [version, platform, count] of increments) {
        if (typeof version !== 'string' || typeof platform !== 'string' || !Number.isInteger(count) || count <= 0) continue;
        tally(
          this.sql.exec(
            'INSERT INTO downloads (day, version, platform, count) VALUES (?, ?, ?, ?) ON CONFLICT (day, version, platform) DO UPDATE SET count = count + excluded.count',
            day,
            version,
            platform,
            count,
          ),
        );
      }
      this.pruneOnce(day, tally);
    });
    return ops;
  }

  /** Totals from `since` (YYYY-MM-DD, inclusive) on. */
  totals(since: string): DownloadTotals {
    const rows = this.sql
      .exec<{ version: string; platform: string; count: number }>(
        'SELECT version, platform, SUM(count) AS count FROM downloads WHERE day >= ? GROUP BY version, platform ORDER BY version, platform',
        since,
      )
      .toArray();
    const daily = this.sql
      .exec<{ day: string; count: number }>('SELECT day, SUM(count) AS count FROM downloads WHERE day >= ? GROUP BY day ORDER BY day', since)
      .toArray();
    return { since, rows: rows.map((r) => ({ ...r })), daily: daily.map((d) => ({ ...d })) };
  }

  /** Deletes rows past the retention, at most once per day. */
  private pruneOnce(day: string, tally: (cursor: SqlStorageCursor<Record<string, SqlStorageValue>>) => void): void {
    const read = this.sql.exec<{ day: string }>('SELECT day FROM pruned');
    const last = read.toArray()[0]?.day;
    tally(read);
    if (last === day) return;
    const cutoff = new Date(Date.parse(`${day}T00:00:00Z`) - RETENTION_DAYS * 86_400_000).toISOString().slice(0, 10);
    tally(this.sql.exec('DELETE FROM downloads WHERE day < ?', cutoff));
    tally(this.sql.exec('DELETE FROM pruned'));
    tally(this.sql.exec('INSERT INTO pruned (day) VALUES (?)', day));
  }
}
