import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { mapLimit } from '../../../src/concurrency';
import { changeProviderLifecycle } from '../../../src/store/lifecycle/providers';
import { committedRecordKey, releaseObjectKey, mirrorIndexKey, moduleCatalogKey, providerPageKey, versionsDocumentKey } from '../../../src/store/layout';
import { versionsDocument } from '../../../src/store/providers/documents';
import { storeMirroredVersion } from '../../../src/store/mirror/write';
import {
  checkVersionsDocumentRoom,
  KV_MAX_VALUE_BYTES as STORE_MAX_VALUE_BYTES,
  listedVersion,
  versionsDocumentRoom,
  versionsEntryBytes,
} from '../../../src/store/value-limits';
import { writeManifest } from '../../../src/store/mirror/pull';
import { clearPolicy, writePolicy } from '../../../src/store/mirror/policy';
import { parsePolicy } from '../../../src/protocol/mirror-policy';
import { forgetPullThroughMemory } from '../../../src/mirror/pull-through';
import type { VersionRecord } from '../../../src/store/types';
import { countingStore } from '../../fixtures/counting-store';
import type { BlobStore, KvStore } from '../../../src/store/store';
import { InputError } from '../../../src/protocol/errors';
import { emptyIndex, indexWith, writeProviderIndex } from '../../../src/store/providers/version-index';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import { fakeRelease } from '../../fixtures/release';
import { PAGE_FULL_VERSIONS, type Catalog, type CatalogEntry, type ProviderPageData } from '../../../src/store/pages/read';
import type { ModuleCatalog } from '../../../src/store/modules/types';
import { address, storedEverything } from '../helpers';
import { zipStored } from '../../fixtures/archives';
import { TEST_KEY } from '../../fixtures/release';
import { PLATFORMS_14, SCAFFOLDING_PLATFORMS } from '../../fixtures/platforms';
import { KV_MAX_KEY_BYTES, KV_MAX_VALUE_BYTES } from '../../fixtures/production/rules';
import { buildRelease, hex, issue, manifestOf, type Session } from '../publish/api';
import { at, ORIGIN, production } from './scenario';

// KV's key limit (512 bytes) against the longest names the registry accepts: a 253-character hostname
// (REGISTRY_HOSTNAME), 64-character namespace, type, module name and system, and a 128-character version
// with pre-release and build metadata. Every key the store writes for them must fit, or the publish must be
// refused at its start with a clear 4xx naming the limit — never a 5xx at the commit.

const LABEL = (c: string, n: number) => c.repeat(n);
/** 253 characters: three 63-character labels and a 61-character one. */
const LONG_HOST = [LABEL('h', 63), LABEL('i', 63), LABEL('j', 63), LABEL('k', 61)].join('.');
const NS = `long${'n'.repeat(60)}`;
const TYPE = `t${'y'.repeat(63)}`;
const NAME = `m${'o'.repeat(63)}`;
const SYSTEM = `s${'y'.repeat(63)}`;
/** 128 characters: 1.0.0-PRERELEASE+BUILD. */
const VERSION = `1.0.0-rc.${'a'.repeat(56)}+build.${'b'.repeat(128 - 9 - 56 - 7)}`;

describe('KV keys at the longest names the registry accepts', () => {
  it('names and version are at their maximum lengths', () => {
    expect([LONG_HOST.length, NS.length, TYPE.length, NAME.length, SYSTEM.length, VERSION.length]).toEqual([253, 64, 64, 64, 64, 128]);
  });

  for (const hostname of [LONG_HOST, 'registry.example.com']) {
    it(`a provider and a module at ${hostname.length}-character REGISTRY_HOSTNAME publish with every KV key within 512 bytes, or are refused at the start with a 4xx`, async () => {
      const p = production({ vars: { INDEX_CACHE_SECONDS: '0', REGISTRY_HOSTNAME: hostname } });
      await writeSigningKeys(env.REGISTRY_KV, hostname, NS, [TEST_KEY]);
      const { token } = await issue('publish', [NS]);
      const auth = { authorization: `Bearer ${token}` };
      const send = async (path: string, init: RequestInit) => p.fetch('A', new Request(new URL(path, ORIGIN), init));

      // Provider: 14 platforms would not lengthen the longest key; two with the longest names Terraform builds.
      const release = await buildRelease(TYPE, VERSION, { platforms: ['linux_amd64', 'windows_arm64'] });
      const started = await send(`/v1/publish/providers/${NS}/${TYPE}/${VERSION}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(await manifestOf(release)),
      });
      const provider = await publishThrough(send, auth, started, (f) => release.files.get(f)!);

      const pkg = zipStored({ 'main.tf': 'variable "x" {}\n' });
      const moduleStarted = await send(`/v1/publish/modules/${NS}/${NAME}/${SYSTEM}/${VERSION}`, await moduleStart(auth, pkg));
      const module = await publishThrough(send, auth, moduleStarted, () => pkg);

      // No invocation answered 5xx; every KV key written fits.
      expect(p.invocations.filter((i) => i.status >= 500)).toEqual([]);
      expect(p.kv.largest.keyBytes).toBeLessThanOrEqual(KV_MAX_KEY_BYTES);
      for (const outcome of [provider, module]) {
        if (outcome.status === 200) continue;
        // Refused: at the start, a 4xx naming the limit, nothing written for it.
        expect(outcome.step, outcome.text).toBe('start');
        expect(outcome.status).toBeGreaterThanOrEqual(400);
        expect(outcome.status).toBeLessThan(500);
        expect(outcome.text).toMatch(/at most (512 bytes|256)/);
      }
      if (hostname !== LONG_HOST) {
        // At an ordinary hostname the provider publishes and installs at another location; the module's package
        // name (NAME-SYSTEM-VERSION.tar.gz, 264 characters in its URL) is refused at the start.
        expect([provider.status, module.status]).toEqual([200, 400]);
        expect(module.text).toContain('at most 256');
        expect((await at(p, 'B', `/v1/providers/${NS}/${TYPE}/${encodeURIComponent(VERSION)}/download/windows/arm64`)).status).toBe(200);
      } else {
        expect([provider.status, module.status]).toEqual([400, 400]);
        expect(provider.text).toContain('would be 567 bytes');
      }
      // The figure for the docs.
      console.log(`REGISTRY_HOSTNAME of ${hostname.length}: longest KV key written ${p.kv.largest.keyBytes} bytes (${p.kv.largest.key.slice(0, 40)}…)`);
    }, 60_000);
  }
});

// KV's value limit (25 MiB) against the largest lists the registry rewrites: the versions document and the
// mirror's index.json of a provider with 1,000 versions (the size the budgets promise) of 14 platforms
// (HashiCorp's scaffolding's 13 and windows_arm, test/fixtures/platforms.ts), each version 128 characters long.

/** A 128-character version (for i < 10,000) and a short one, both unique per i. */
const long = (i: number) => `${i}.0.0-rc.${'a'.repeat(56)}+build.${String(i).padStart(57 - String(i).length, 'b')}`;
const short = (i: number) => `${Math.floor(i / 100)}.${i % 100}.0`;

describe('KV values at the largest lists the registry writes', () => {
  it("lists 14 platforms: the goreleaser fixture's 13 (HashiCorp's scaffolding) and windows_arm, each once", () => {
    expect(PLATFORMS_14).toHaveLength(14);
    expect(new Set(PLATFORMS_14).size).toBe(14);
    expect(PLATFORMS_14.filter((p) => p !== 'windows_arm')).toEqual([...SCAFFOLDING_PLATFORMS]);
  });

  for (const [shape, version] of [
    ['128-character', long],
    ['short (X.Y.0)', short],
  ] as const) {
    it(`a provider with 1,000 versions of 14 platforms, ${shape} versions: every list and page document it writes stays under 25 MiB`, async () => {
      const p = production();
      const many = address('kvsizes', shape.startsWith('128') ? 'long' : 'short');
      const records = Array.from({ length: 1000 }, (_, i) => fakeRelease(many, version(i), PLATFORMS_14, { archiveSize: 16 }).record);
      if (shape.startsWith('128')) expect(records.every((r) => r.version.length === 128)).toBe(true);
      await mapLimit(records, 64, (record) => env.REGISTRY_R2.put(committedRecordKey(many, record.version), JSON.stringify(record)).then(() => {}));
      await writeProviderIndex(env.REGISTRY_R2, indexWith(emptyIndex(many), records, {}), null);
      // A lifecycle change rewrites the lists and the page data from the index, through the harness's KV (which
      // refuses a value over 25 MiB as the binding does).
      await p.run('A', (e) =>
        changeProviderLifecycle({ kv: e.REGISTRY_KV, blobs: e.REGISTRY_R2 }, many, { kind: 'deprecate', version: version(0), message: 'old' }),
      );
      expect(p.invocations[0]!.exceeded).toBeNull();
      const size = async (key: string) => new TextEncoder().encode((await env.REGISTRY_KV.get(key, 'text')) ?? '').byteLength;
      const [versionsDoc = 0, mirrorIndex = 0, page = 0] = await Promise.all(
        [versionsDocumentKey(many), mirrorIndexKey(many), providerPageKey(many)].map(size),
      );
      // The page data keeps the packages of the newest PAGE_FULL_VERSIONS only: the largest value written is
      // the versions document (the protocol's list of every version with its platforms).
      expect(p.kv.largest.valueBytes).toBe(Math.max(versionsDoc, mirrorIndex, page));
      expect(p.kv.largest.valueBytes).toBeLessThan(KV_MAX_VALUE_BYTES);
      expect(page).toBeLessThan(versionsDoc);
      console.log(
        `1,000 versions × 14 platforms (${shape}): versions document ${versionsDoc} bytes, mirror index.json ${mirrorIndex} bytes, page data ${page} bytes`,
      );
    }, 120_000);
  }
});

// Past the 1,000 versions the budgets use: a provider with 6,000 versions of 14 platforms, 128-character
// versions (its page data would have been ~31 MiB, over KV's 25 MiB, before the page data kept the packages
// of the newest PAGE_FULL_VERSIONS only). The stored state is built through the store functions; one more
// version is published through the publish API, and its pages still reach the oldest version.
describe('a provider with 6,000 versions of 14 platforms', () => {
  it('keeps its page data bounded, takes a publish through the API, and its pages still list and show every version', async () => {
    const p = production();
    const huge = address('kvmany', 'huge');
    const records = Array.from({ length: 6000 }, (_, i) => fakeRelease(huge, long(i), PLATFORMS_14, { archiveSize: 16 }).record);
    // The index holds every record; the oldest version's R2 record is what its page reads its packages from.
    await env.REGISTRY_R2.put(committedRecordKey(huge, long(0)), JSON.stringify(records[0]));
    await writeProviderIndex(env.REGISTRY_R2, indexWith(emptyIndex(huge), records, {}), null);
    await writeSigningKeys(env.REGISTRY_KV, huge.hostname, huge.namespace, [TEST_KEY]);
    const { token } = await issue('publish', [huge.namespace]);
    const auth = { authorization: `Bearer ${token}` };
    const send = async (path: string, init: RequestInit) => p.fetch('A', new Request(new URL(path, ORIGIN), init));

    const release = await buildRelease(huge.type, '9999.0.0', { platforms: PLATFORMS_14 });
    const started = await send(`/v1/publish/providers/${huge.namespace}/${huge.type}/9999.0.0`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(await manifestOf(release)),
    });
    const published = await publishThrough(send, auth, started, (f) => release.files.get(f)!);
    expect(published.status, published.text).toBe(200);
    expect(p.invocations.filter((i) => i.status >= 500)).toEqual([]);

    const size = async (key: string) => new TextEncoder().encode((await env.REGISTRY_KV.get(key, 'text')) ?? '').byteLength;
    const [versionsDoc = 0, page = 0] = await Promise.all([versionsDocumentKey(huge), providerPageKey(huge)].map(size));
    const stored = JSON.parse((await env.REGISTRY_KV.get(providerPageKey(huge), 'text'))!) as ProviderPageData;
    expect(stored.versions).toHaveLength(6001);
    expect(stored.versions.filter((v) => v.platforms !== undefined)).toHaveLength(PAGE_FULL_VERSIONS);
    expect(stored.versions[0]!.version).toBe('9999.0.0');
    // Bounded: under a tenth of KV's limit at 6,000 versions, and smaller than the versions document.
    expect(page).toBeLessThan(KV_MAX_VALUE_BYTES / 10);
    expect(page).toBeLessThan(versionsDoc);
    expect(p.kv.largest.valueBytes).toBeLessThan(KV_MAX_VALUE_BYTES);
    const older = stored.versions.slice(PAGE_FULL_VERSIONS);
    const perVersion = new TextEncoder().encode(JSON.stringify(older)).byteLength / older.length;
    console.log(
      `6,001 versions × 14 platforms (128-character): page data ${page} bytes (~${Math.round(perVersion)} bytes per older version: 25 MiB at ~${Math.floor(KV_MAX_VALUE_BYTES / perVersion)} versions), versions document ${versionsDoc} bytes (25 MiB at ~${Math.floor(KV_MAX_VALUE_BYTES / (versionsDoc / 6001))} versions)`,
    );

    // The pages: the provider page lists all 6,001 versions, the oldest linked; the oldest version's page shows
    // its packages (read from its R2 record); the new version's from the page data.
    const HTML = { headers: { accept: 'text/html' } };
    const home = await at(p, 'B', `/providers/${huge.namespace}/${huge.type}`, HTML);
    expect(home.status).toBe(200);
    expect(home.text).toContain('(6001)');
    expect(home.text).toContain(`/providers/${huge.namespace}/${huge.type}/${encodeURIComponent(long(0))}`);
    expect(home.text).toContain('terraform-provider-huge_9999.0.0_windows_arm64.zip');
    const oldest = await at(p, 'B', `/providers/${huge.namespace}/${huge.type}/${encodeURIComponent(long(0))}`, HTML);
    expect(oldest.status).toBe(200);
    expect(oldest.text).toContain('14 platforms');
    for (const r of records[0]!.packages) expect(oldest.text).toContain(r.shasum);
    const mirror = await at(p, 'B', `/mirror/${huge.hostname}/${huge.namespace}/${huge.type}?version=${encodeURIComponent(long(0))}`, HTML);
    expect(mirror.status).toBe(200);
    expect(mirror.text).toContain(records[0]!.packages[0]!.filename);
  }, 180_000);
});

// The catalogues are one value each: the home page's `pages/catalog` (one entry per provider) and a host's
// `module-catalog/HOST` (every module with its version strings). Their sizes at 2,000 packages, measured on the
// shapes the registry writes.
describe('the catalogues at 2,000 packages', () => {
  it('stay under 25 MiB (a tenth of it at realistic names)', () => {
    const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).byteLength;
    const entry = (i: number, hostname: string, name: number, description: number): CatalogEntry => ({
      hostname,
      namespace: `namespace-${i}`.padEnd(name, 'n'),
      type: `type-${i}`.padEnd(name, 't'),
      latest: long(i),
      description: 'd'.repeat(description),
      versionCount: 1000,
      publishedAt: '2026-11-27T05:00:00.000Z',
    });
    // Realistic: 20-character names, a 200-character description; longest: 253-character host, 64-character names, 1,000-character description.
    const realistic = bytes({ providers: Array.from({ length: 2000 }, (_, i) => entry(i, 'registry.example.com', 20, 200)) } satisfies Catalog);
    const longest = bytes({ providers: Array.from({ length: 2000 }, (_, i) => entry(i, 'h'.repeat(253), 64, 1000)) } satisfies Catalog);
    // Modules: 2,000 modules of 100 versions each (short and 128-character).
    const modules = (version: (i: number) => string) =>
      bytes({
        modules: Array.from({ length: 2000 }, (_, i) => ({
          namespace: `namespace-${i}`,
          name: `module-${i}`,
          system: 'aws',
          versions: Array.from({ length: 100 }, (_, v) => version(v)),
        })),
      } satisfies ModuleCatalog);
    const [moduleShort, moduleLong] = [modules(short), modules(long)];
    expect(realistic).toBeLessThan(KV_MAX_VALUE_BYTES / 10);
    for (const size of [longest, moduleShort]) expect(size).toBeLessThan(KV_MAX_VALUE_BYTES);
    // The module catalogue lists every version string of every module, so at ~200,000 module versions of 128
    // characters it reaches 25 MiB: a publish past that is refused at its start (the describe below).
    console.log(
      `2,000 providers: pages/catalog ${realistic} bytes (25 MiB at ~${Math.floor(KV_MAX_VALUE_BYTES / (realistic / 2000))} providers), ${longest} at the longest names (~${Math.floor(KV_MAX_VALUE_BYTES / (longest / 2000))}); 2,000 modules × 100 versions: module-catalog ${moduleShort} bytes short versions (25 MiB at ~${Math.floor(KV_MAX_VALUE_BYTES / (moduleShort / 200_000))} module versions), ${moduleLong} 128-character (~${Math.floor(KV_MAX_VALUE_BYTES / (moduleLong / 200_000))})`,
    );
  });
});

/** Uploads each file of a started session and commits; the step that stopped it and its answer. */
async function publishThrough(
  send: (path: string, init: RequestInit) => Promise<Response>,
  auth: Record<string, string>,
  started: Response,
  bytesOf: (filename: string) => Uint8Array,
): Promise<{ step: 'start' | 'upload' | 'commit'; status: number; text: string }> {
  if (started.status !== 201) return { step: 'start', status: started.status, text: await started.text() };
  const session = (await started.json()) as Session;
  for (const file of session.files) {
    const bytes = bytesOf(file.filename);
    const uploaded = await send(file.url, { method: 'PUT', headers: { ...auth, 'content-length': String(bytes.byteLength) }, body: bytes });
    if (uploaded.status !== 200) return { step: 'upload', status: uploaded.status, text: await uploaded.text() };
  }
  const committed = await send(session.commit_url, { method: 'POST', headers: auth });
  return { step: 'commit', status: committed.status, text: await committed.text() };
}

// Past KV's value limit: a new version whose versions document (or module catalogue) would pass 25 MiB is
// refused at its publish's start with a 4xx naming the limit and the fix — before any upload, nothing written —
// instead of a 5xx after its commit. The stored values are built by the store's own functions at the real limit:
// a versions document (versionsDocument) of ~43,000 128-character versions of 14 platforms and a module
// catalogue of ~200,000 128-character module versions, each within one entry of 25 MiB.
describe('a publish past KV 25 MiB value limit', () => {
  it('the limit is the harness rule (the binding refuses a value over it)', () => {
    expect(STORE_MAX_VALUE_BYTES).toBe(KV_MAX_VALUE_BYTES);
  });

  it('a provider whose versions document would pass 25 MiB: refused at the publish start, by a mirror too, nothing written', async () => {
    const p = production({ vars: { INDEX_CACHE_SECONDS: '0' } });
    const full = address('kvfull', 'full');
    const template = fakeRelease(full, long(0), PLATFORMS_14, { archiveSize: 16 }).record;
    const entry = versionsEntryBytes({ version: long(0), protocols: template.protocols, platforms: template.packages });
    // Every 128-character version's entry has the same size: the most that fit, the new one (128 characters too) does not.
    const count = Math.floor((KV_MAX_VALUE_BYTES - versionsDocument([]).length + 1) / entry);
    const body = versionsDocument(Array.from({ length: count }, (_, i) => ({ ...template, version: long(i) })));
    expect(new TextEncoder().encode(body).byteLength).toBeLessThanOrEqual(KV_MAX_VALUE_BYTES);
    expect(new TextEncoder().encode(body).byteLength + entry).toBeGreaterThan(KV_MAX_VALUE_BYTES);
    await env.REGISTRY_KV.put(versionsDocumentKey(full), body);
    await writeSigningKeys(env.REGISTRY_KV, full.hostname, full.namespace, [TEST_KEY]);
    const { token } = await issue('publish', [full.namespace]);
    const auth = { authorization: `Bearer ${token}` };
    const send = async (path: string, init: RequestInit) => p.fetch('A', new Request(new URL(path, ORIGIN), init));

    const next = long(count);
    const release = await buildRelease(full.type, next, { platforms: PLATFORMS_14 });
    const started = await send(`/v1/publish/providers/${full.namespace}/${full.type}/${encodeURIComponent(next)}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(await manifestOf(release)),
    });
    const outcome = await publishThrough(send, auth, started, (f) => release.files.get(f)!);
    expect(outcome.step).toBe('start');
    expect(outcome.status, outcome.text).toBe(400);
    expect(outcome.text).toContain(`has ${count} versions`);
    expect(outcome.text).toContain("over Workers KV's 25.00 MiB value limit");
    expect(outcome.text).toContain('npm run lifecycle -- withdraw kvfull/full');
    const start = p.invocations.at(-1)!;
    expect(start.counts.kvWrites).toBe(0);
    expect(await env.REGISTRY_KV.get(versionsDocumentKey(full), 'text')).toBe(body);
    expect(await env.REGISTRY_R2.head(committedRecordKey(full, next))).toBeNull();

    // The mirror's way in (sync, import, pull-through all store a new version through storeMirroredVersion): the same check, nothing written.
    const mirrored = fakeRelease(full, next, PLATFORMS_14, { archiveSize: 16 });
    const store = { kv: env.REGISTRY_KV as unknown as KvStore, blobs: env.REGISTRY_R2 as unknown as BlobStore };
    await expect(storeMirroredVersion(store, mirrored.record, [])).rejects.toThrow(InputError);
    await expect(storeMirroredVersion(store, mirrored.record, [])).rejects.toThrow(`has ${count} versions`);
    expect(await env.REGISTRY_R2.head(committedRecordKey(full, next))).toBeNull();
    console.log(
      `versions document at the limit: ${count} versions of 14 platforms (128-character), ${entry} bytes each; a publish of one more refused at its start`,
    );
  }, 120_000);

  it("a mirror sync's new versions count together against the versions document: 1 KV read, the one that no longer fits refused, nothing of it written", async () => {
    const synced = address('kvroom', 'sync');
    const [first, second] = ['1.0.0', '1.1.0'].map((v) => fakeRelease(synced, v, ['linux_amd64'], { archiveSize: 16 }));
    const entryOf = (r: typeof first) => ({ version: r!.record.version, protocols: r!.record.protocols, platforms: r!.record.packages });
    // Room for the empty document and one entry, not two: each version alone fits, the two together do not.
    const limit = versionsDocument([]).length + versionsEntryBytes(entryOf(first)) + versionsEntryBytes(entryOf(second)) - 1;
    const store = countingStore({ kv: env.REGISTRY_KV as unknown as KvStore, blobs: env.REGISTRY_R2 as unknown as BlobStore });
    const room = versionsDocumentRoom(store.kv, synced, limit);
    expect(await storeMirroredVersion(store, first!.record, first!.files, () => {}, undefined, room)).toBe('mirrored');
    await expect(storeMirroredVersion(store, second!.record, second!.files, () => {}, undefined, room)).rejects.toThrow(InputError);
    await expect(storeMirroredVersion(store, second!.record, second!.files, () => {}, undefined, room)).rejects.toThrow('has 1 versions');
    expect(store.counter.requests.filter((r) => r.op === 'kv.get' && r.key === versionsDocumentKey(synced))).toHaveLength(1);
    expect(await env.REGISTRY_R2.head(committedRecordKey(synced, '1.0.0'))).not.toBeNull();
    expect(await env.REGISTRY_R2.head(committedRecordKey(synced, '1.1.0'))).toBeNull();
    // Checked alone against the stored document (which does not list the first yet), the second would pass.
    await expect(checkVersionsDocumentRoom(env.REGISTRY_KV as unknown as KvStore, synced, entryOf(second), limit)).resolves.toBeUndefined();
  });

  it('a mirrored version gaining a platform past 25 MiB: refused by pull-through before its lease or the upstream, by sync and import too, nothing written', async () => {
    const p = production({ vars: { INDEX_CACHE_SECONDS: '0' } });
    const HOST = 'kvroom.test';
    const grow = address('kvroom', 'grow', HOST);
    // 1.0.0 is mirrored with linux_amd64; the upstream (its verified manifest stored: no upstream needed) also offers linux_arm64.
    const both = fakeRelease(grow, '1.0.0', ['linux_amd64', 'linux_arm64'], { archiveSize: 16 });
    const held: VersionRecord = { ...both.record, packages: both.record.packages.slice(0, 1) };
    const arm64 = both.record.packages[1]!;
    const gain = versionsEntryBytes(listedVersion(both.record)) - versionsEntryBytes(listedVersion(held));
    // The versions document: 1.0.0, 128-character versions of 14 platforms, then single-platform versions filling it
    // to less than linux_arm64's entry (`gain` bytes) below 25 MiB (entries of n records: EMPTY − 1 + their sizes).
    const records: VersionRecord[] = [held];
    let room = KV_MAX_VALUE_BYTES - (versionsDocument([]).length - 1) - versionsEntryBytes(listedVersion(held));
    const template = fakeRelease(grow, long(0), PLATFORMS_14, { archiveSize: 16 }).record;
    const single = fakeRelease(grow, '0.0.1', ['linux_amd64'], { archiveSize: 16 }).record;
    const sized = (record: VersionRecord) => versionsEntryBytes(listedVersion(record));
    // A single-platform version `J.0.0-t.` and k x's (k = 1…120): its entry is smallest(j) − 1 + k bytes.
    const tuner = (j: number, k: number): VersionRecord => ({ ...single, version: `${j}.0.0-t.${'x'.repeat(k)}` });
    const smallest = (j: number) => sized(tuner(j, 1));
    for (let i = 0; room - sized({ ...template, version: long(i) }) >= smallest(0) + 240; i++) {
      records.push({ ...template, version: long(i) });
      room -= sized(records.at(-1)!);
    }
    for (let j = 0; room >= gain; j++) {
      const [least, most, next] = [smallest(j), smallest(j) + 119, smallest(j + 1)];
      // The largest while another fits after it; then one filling the room exactly, or leaving exactly the next one's least.
      const entry = room >= most + next ? most : room <= most ? room : room - next;
      records.push(tuner(j, entry - least + 1));
      room -= sized(records.at(-1)!);
    }
    const body = versionsDocument(records);
    const size = new TextEncoder().encode(body).byteLength;
    expect(size).toBeLessThanOrEqual(KV_MAX_VALUE_BYTES);
    expect(size + gain).toBeGreaterThan(KV_MAX_VALUE_BYTES);
    // The one room check: the platform fits with `gain` bytes of room, not with one less (only its entry counts).
    const kv = env.REGISTRY_KV as unknown as KvStore;
    await env.REGISTRY_KV.put(versionsDocumentKey(grow), body);
    await expect(versionsDocumentRoom(kv, grow, size + gain).take(listedVersion(both.record), listedVersion(held))).resolves.toBeUndefined();
    await expect(versionsDocumentRoom(kv, grow, size + gain - 1).take(listedVersion(both.record), listedVersion(held))).rejects.toThrow(InputError);
    await expect(versionsDocumentRoom(kv, grow, size).take(listedVersion(held), listedVersion(held))).resolves.toBeUndefined();

    await env.REGISTRY_R2.put(committedRecordKey(grow, '1.0.0'), JSON.stringify(held));
    const upstream = 'http://127.0.0.1:9';
    await writeManifest(env.REGISTRY_R2, {
      address: grow,
      version: '1.0.0',
      protocols: ['5.0'],
      signer: held.signingKey,
      shasumsUrl: `${upstream}/files/SHA256SUMS`,
      sums: '',
      signature: '',
      packages: both.record.packages.map((pkg) => ({
        ...pkg,
        upstreamFilename: pkg.filename,
        downloadUrl: `${upstream}/files/${pkg.filename}`,
        documentUrl: `${upstream}/v1/x`,
      })),
      verifiedAt: new Date().toISOString(),
    });
    await writePolicy(
      env.REGISTRY_KV,
      parsePolicy(
        JSON.stringify({ providers: [{ source: `${HOST}/kvroom/*`, versions: '>= 1.0' }], hosts: { [HOST]: { 'providers.v1': `${upstream}/v1/providers/` } } }),
        'test policy',
      ),
    );
    try {
      const before = await storedEverything();
      const pulled = await at(p, 'A', `/v1/archives/${HOST}/kvroom/grow/1.0.0/${arm64.filename}`);
      expect(pulled.status, pulled.text).toBe(400);
      expect(pulled.text).toContain(`${HOST}/kvroom/grow 1.0.0 (1 more platform): ${HOST}/kvroom/grow has ${records.length} versions`);
      expect(pulled.text).toContain("over Workers KV's 25.00 MiB value limit");
      expect(pulled.text).toContain(`npm run mirror -- remove ${HOST}/kvroom/grow --version V`);
      // Refused before the pull lease or the upstream: no fetch (an unreachable upstream would have made it a 502), nothing written.
      const invocation = p.invocations.at(-1)!;
      expect([invocation.counts.subrequests, invocation.counts.kvWrites, invocation.counts.r2ClassA]).toEqual([0, 0, 0]);
      expect(await storedEverything()).toEqual(before);

      // Sync and import add platforms through storeMirroredVersion: the same check, nothing written.
      const store = { kv, blobs: env.REGISTRY_R2 as unknown as BlobStore };
      await expect(storeMirroredVersion(store, both.record, both.files)).rejects.toThrow(InputError);
      await expect(storeMirroredVersion(store, both.record, both.files)).rejects.toThrow('(1 more platform)');
      expect(await storedEverything()).toEqual(before);

      // What a pull stopped after its verified put leaves (the archive stored, not committed): served, and the commit
      // that would complete it after the response is refused before it takes a lease: nothing more written.
      await env.REGISTRY_R2.put(releaseObjectKey(grow, '1.0.0', arm64.filename), both.bytes.get(arm64.filename)!, { customMetadata: { sha256: arm64.shasum } });
      const stopped = await storedEverything();
      const served = await p.fetch('A', new Request(new URL(`/v1/archives/${HOST}/kvroom/grow/1.0.0/${arm64.filename}`, ORIGIN)));
      expect(served.status).toBe(200);
      expect([p.invocations.at(-1)!.counts.kvWrites, p.invocations.at(-1)!.counts.r2ClassA]).toEqual([0, 0]);
      expect(await storedEverything()).toEqual(stopped);
    } finally {
      await clearPolicy(env.REGISTRY_KV);
      forgetPullThroughMemory();
    }
    console.log(
      `versions document ${size} bytes, ${KV_MAX_VALUE_BYTES - size} below 25 MiB; one more platform adds ${gain}: refused by pull-through, sync and import`,
    );
  }, 120_000);

  it('a module whose catalogue would pass 25 MiB: refused at the publish start, nothing written', async () => {
    const p = production({ vars: { INDEX_CACHE_SECONDS: '0' } });
    const hostname = address('x', 'y').hostname;
    const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).byteLength;
    // Modules of 100 128-character versions, then single versions, while they fit.
    const modules: ModuleCatalog['modules'] = [];
    let size = bytes({ modules: [] });
    let v = 0;
    for (;;) {
      const module = { namespace: `ns-${modules.length}`, name: 'vpc', system: 'aws', versions: Array.from({ length: 100 }, () => long(v++)) };
      const added = bytes(module) + (modules.length > 0 ? 1 : 0);
      if (size + added > KV_MAX_VALUE_BYTES) break;
      modules.push(module);
      size += added;
    }
    const last = modules.at(-1)!;
    while (size + bytes(long(v)) + 1 <= KV_MAX_VALUE_BYTES) {
      last.versions.push(long(v++));
      size += bytes(long(v - 1)) + 1;
    }
    const body = JSON.stringify({ modules } satisfies ModuleCatalog);
    expect(new TextEncoder().encode(body).byteLength).toBe(size);
    await env.REGISTRY_KV.put(moduleCatalogKey(hostname), body);
    const versions = modules.reduce((n, m) => n + m.versions.length, 0);

    const { token } = await issue('publish', ['kvfull']);
    const auth = { authorization: `Bearer ${token}` };
    const send = async (path: string, init: RequestInit) => p.fetch('A', new Request(new URL(path, ORIGIN), init));
    const pkg = zipStored({ 'main.tf': 'variable "x" {}\n' });
    const started = await send(`/v1/publish/modules/kvfull/network/aws/1.0.0`, await moduleStart(auth, pkg));
    const outcome = await publishThrough(send, auth, started, () => pkg);
    expect(outcome.step).toBe('start');
    expect(outcome.status, outcome.text).toBe(400);
    expect(outcome.text).toContain(`lists ${versions} module versions`);
    expect(outcome.text).toContain("over Workers KV's 25.00 MiB value limit");
    expect(p.invocations.at(-1)!.counts.kvWrites).toBe(0);
    expect(await env.REGISTRY_KV.get(moduleCatalogKey(hostname), 'text')).toBe(body);
    console.log(`module catalogue at the limit: ${versions} module versions of 128 characters (${modules.length} modules); a new module refused at its start`);
  }, 120_000);
});

/** The request that starts a module publish of the zip `pkg` (empty docs). */
async function moduleStart(auth: Record<string, string>, pkg: Uint8Array): Promise<RequestInit> {
  return {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      format: 'zip',
      size: pkg.byteLength,
      sha256: await hex(pkg),
      docs: { inputs: [], outputs: [], providers: [], requiredVersion: null, submodules: [] },
    }),
  };
}
