import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { listAuditEntries, MAX_AUDIT_READS } from '../../../src/store/audit/read';
import { appendAuditEntry } from '../../../src/store/audit/write';
import { auditDayPrefix } from '../../../src/store/layout';
import type { BlobStore } from '../../../src/store/store';

// The audit log on the real (Miniflare) R2: one object per entry under a day prefix, created only if absent,
// listed by time window and namespace, a damaged object reported rather than hiding the others.

const blobs = env.REGISTRY_R2 as unknown as BlobStore;
const store = { blobs };
const operator = { kind: 'operator', via: 'local' } as const;

async function keysUnder(prefix: string): Promise<string[]> {
  return (await env.REGISTRY_R2.list({ prefix })).objects.map((o) => o.key);
}

describe('appendAuditEntry', () => {
  it('stores each entry as its own JSON object under .audit/DAY/, time-ordered names, even within one millisecond', async () => {
    const time = '2026-03-04T05:06:07.089Z';
    const a = await appendAuditEntry(store, {
      time,
      actor: operator,
      action: 'provider.publish',
      target: 'registry.example.com/acme/thing 1.0.0',
      outcome: 'ok',
      digests: { 'a.zip': 'ab'.repeat(32) },
    });
    const b = await appendAuditEntry(store, {
      time,
      actor: { kind: 'token', tokenId: '0123456789ab', name: 'ci' },
      action: 'provider.publish',
      target: 'registry.example.com/acme/thing 1.0.0',
      outcome: 'unchanged',
    });
    expect(a.key).toMatch(/^\.audit\/2026-03-04\/050607089-[0-9a-f]{16}\.json$/);
    expect(b.key).not.toBe(a.key);
    expect((await keysUnder(auditDayPrefix('2026-03-04'))).sort()).toEqual([a.key, b.key].sort());
    expect(JSON.parse(await (await env.REGISTRY_R2.get(a.key))!.text())).toEqual(a.entry);
  });

  it('never overwrites an entry: a taken name (If-None-Match: *) leaves it as it was and the entry goes under another name', async () => {
    const taken = '.audit/2026-03-05/000000000-taken.json';
    await env.REGISTRY_R2.put(taken, 'the original entry');
    const puts: { key: string; onlyIf: unknown }[] = [];
    // The real R2 binding; only the first write is aimed at the taken name.
    const aimed: BlobStore = {
      ...blobs,
      head: (k) => blobs.head(k),
      get: (k) => blobs.get(k),
      list: (o) => blobs.list(o),
      delete: (k) => blobs.delete(k),
      put: (key, value, options) => {
        const target = puts.length === 0 ? taken : key;
        puts.push({ key: target, onlyIf: options?.onlyIf });
        return blobs.put(target, value, options);
      },
    };
    const { key } = await appendAuditEntry(
      { blobs: aimed },
      { time: '2026-03-05T00:00:00.000Z', actor: operator, action: 'key.add', target: 'registry.example.com/acme', outcome: 'ok' },
    );
    expect(puts.map((p) => p.onlyIf)).toEqual([{ etagDoesNotMatch: '*' }, { etagDoesNotMatch: '*' }]);
    expect(key).not.toBe(taken);
    expect(await (await env.REGISTRY_R2.get(taken))!.text()).toBe('the original entry');
    expect(await env.REGISTRY_R2.get(key)).not.toBeNull();
  });

  it('refuses a malformed entry and writes nothing', async () => {
    const before = await keysUnder('.audit/2026-03-06/');
    const base = { time: '2026-03-06T00:00:00.000Z', actor: operator, action: 'token.create', target: 'token 0123456789ab', outcome: 'ok' } as const;
    await expect(appendAuditEntry(store, { ...base, action: 'Publish' })).rejects.toThrow(/action "Publish" is not domain.verb/);
    await expect(appendAuditEntry(store, { ...base, target: 'a\nb' })).rejects.toThrow(/target/);
    await expect(appendAuditEntry(store, { ...base, outcome: 'maybe' as 'ok' })).rejects.toThrow(/outcome/);
    await expect(appendAuditEntry(store, { ...base, actor: { kind: 'root' } as never })).rejects.toThrow(/actor/);
    await expect(appendAuditEntry(store, { ...base, time: 'yesterday' })).rejects.toThrow(/time/);
    expect(await keysUnder('.audit/2026-03-06/')).toEqual(before);
  });
});

describe('listAuditEntries', () => {
  const now = new Date('2026-05-10T12:00:00.000Z');
  const entry = (time: string, target: string, extra: object = {}) =>
    appendAuditEntry(store, { time, actor: operator, action: 'provider.publish', target, outcome: 'ok', ...extra });

  it('lists a time window oldest first, filters by namespace (target or namespaces), and reports damaged objects', async () => {
    await entry('2026-05-01T00:00:00.000Z', 'registry.example.com/acme/old 1.0.0');
    await entry('2026-05-09T23:59:59.999Z', 'registry.example.com/other/thing 1.0.0');
    await entry('2026-05-09T08:00:00.000Z', 'registry.example.com/acme/thing 2.0.0');
    await entry('2026-05-10T11:00:00.000Z', 'token 0123456789ab', { action: 'token.create', namespaces: ['acme', 'beta'] });
    await env.REGISTRY_R2.put('.audit/2026-05-10/000000000-damaged.json', '{not json');

    const week = await listAuditEntries(store, { since: '2026-05-08T00:00:00.000Z', now });
    expect(week.entries.map((e) => e.target)).toEqual([
      'registry.example.com/acme/thing 2.0.0',
      'registry.example.com/other/thing 1.0.0',
      'token 0123456789ab',
    ]);
    expect(week.damaged).toEqual(['.audit/2026-05-10/000000000-damaged.json']);

    const acme = await listAuditEntries(store, { since: '2026-04-30T00:00:00.000Z', namespace: 'ACME', now });
    expect(acme.entries.map((e) => e.target)).toEqual(['registry.example.com/acme/old 1.0.0', 'registry.example.com/acme/thing 2.0.0', 'token 0123456789ab']);
    const beta = await listAuditEntries(store, { namespace: 'beta', now });
    expect(beta.entries.map((e) => e.target)).toEqual(['token 0123456789ab']);
    // Within the first day of the window, the exact time still counts.
    const sinceNoon = await listAuditEntries(store, { since: '2026-05-09T12:00:00.000Z', now });
    expect(sinceNoon.entries.map((e) => e.target)).toEqual(['registry.example.com/other/thing 1.0.0', 'token 0123456789ab']);

    // The newest N matching (the audit page): newest first, reading only until N match; the window's names are counted, not read.
    const newest = await listAuditEntries(store, { since: '2026-05-09T12:00:00.000Z', now, newest: 2 });
    expect(newest.entries.map((e) => e.target)).toEqual(['registry.example.com/other/thing 1.0.0', 'token 0123456789ab']);
    expect(newest.damaged).toEqual(['.audit/2026-05-10/000000000-damaged.json']); // read on the way, reported
    expect(newest.total).toBe(3);
    expect(newest.next).toBeNull();
    const newestOne = await listAuditEntries(store, { since: '2026-04-30T00:00:00.000Z', now, newest: 1 });
    expect(newestOne.entries.map((e) => e.target)).toEqual(['token 0123456789ab']);
    expect(newestOne).toMatchObject({ total: 5, damaged: [], read: 1 });
    // A filter reads on until enough match, and the cursor goes on from there.
    const acmeNewest = await listAuditEntries(store, { since: '2026-04-30T00:00:00.000Z', namespace: 'acme', now, newest: 2 });
    expect(acmeNewest.entries.map((e) => e.target)).toEqual(['registry.example.com/acme/thing 2.0.0', 'token 0123456789ab']);
    const acmeOlder = await listAuditEntries(store, { since: '2026-04-30T00:00:00.000Z', namespace: 'acme', now, newest: 2, cursor: acmeNewest.next! });
    expect(acmeOlder.entries.map((e) => e.target)).toEqual(['registry.example.com/acme/old 1.0.0']);
    expect(acmeOlder.next).toBeNull();
    await expect(listAuditEntries(store, { cursor: 'tokens/../x' })).rejects.toThrow(/not one a listing gave/);
  });
});

describe('listAuditEntries reads a bounded number of objects', () => {
  it('a window of 1,200 entries: one query reads at most its bound (MAX_AUDIT_READS), filters included, and the cursor pages through all', async () => {
    const day = '2026-06-01';
    const names: string[] = [];
    // Entries written straight into R2 (what appendAuditEntry would write; 1,200 puts through it take long in workerd).
    const puts: Promise<unknown>[] = [];
    for (let i = 0; i < 1200; i++) {
      const clock = `${String(Math.floor(i / 3600)).padStart(2, '0')}${String(Math.floor(i / 60) % 60).padStart(2, '0')}${String(i % 60).padStart(2, '0')}000`;
      const time = `${day}T${clock.slice(0, 2)}:${clock.slice(2, 4)}:${clock.slice(4, 6)}.000Z`;
      const key = `${auditDayPrefix(day)}${clock}-${String(i).padStart(16, '0')}.json`;
      names.push(key);
      const entry = {
        time,
        actor: operator,
        action: 'provider.publish',
        target: `registry.example.com/${i === 7 ? 'rare' : 'flood'}/thing 1.0.${i}`,
        outcome: i === 7 ? 'ok' : 'refused',
      };
      puts.push(env.REGISTRY_R2.put(key, JSON.stringify(entry)));
      if (puts.length === 50) await Promise.all(puts.splice(0));
    }
    await Promise.all(puts);
    const now = new Date(`${day}T23:00:00.000Z`);
    const since = `${day}T00:00:00.000Z`;
    // A filter matching one old entry: the query stops at its bound and says where to go on.
    const first = await listAuditEntries(store, { since, now, namespace: 'rare', newest: 200 });
    expect(first.read).toBe(MAX_AUDIT_READS);
    expect(first.entries).toEqual([]);
    expect(first.total).toBe(1200);
    expect(first.next).toBe(names[1200 - MAX_AUDIT_READS]);
    const second = await listAuditEntries(store, { since, now, namespace: 'rare', newest: 200, cursor: first.next! });
    expect(second.read).toBe(1200 - MAX_AUDIT_READS); // the rest of the window, fewer than the bound
    expect(second.next).toBeNull();
    expect(second.entries.map((e) => e.target)).toEqual(['registry.example.com/rare/thing 1.0.7']);
    // Oldest first (the CLI) with a smaller bound: pages of exactly that many, every entry once.
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await listAuditEntries(store, { since, now, outcome: 'refused', maxReads: 500, ...(cursor ? { cursor } : {}) });
      expect(page.read).toBeLessThanOrEqual(500);
      seen.push(...page.entries.map((e) => e.target));
      cursor = page.next ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen.length).toBe(1199);
    expect(new Set(seen).size).toBe(1199);
    // A bound above the ceiling is the ceiling.
    expect((await listAuditEntries(store, { since, now, maxReads: 5000 })).read).toBe(MAX_AUDIT_READS);
  }, 120_000); // about 4,600 R2 operations on Miniflare's local R2
});
