import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  formatAddress,
  meetsConstraints,
  parseConstraints,
  platformName,
  sortVersions,
  zhHash,
  type Platform,
  type ProviderAddress,
} from '../../../src/protocol/index';
import { readVersionRecord } from '../../../src/store/providers/version-records';
import { versionsDocumentRoom } from '../../../src/store/value-limits';
import type { PackageRecord, VersionRecord } from '../../../src/store/types';
import { limiter, type Limiter } from '../../../src/concurrency';
import { combinedStatus, type MirrorSummary, type PlatformSummary, type ProviderSummary, type VersionSummary } from './summary';
import { findPackage, listVersions, type UpstreamPackage } from '../../../src/mirror/upstream';
import { discoverProviders } from './upstream';
import { downloadVerified, readSums } from './verify';
import { makeSyncWorkDir } from './work-dir';
import { writeUnderProviderLease } from './provider-lease';
import { fetchSums, storeVerified, type MirrorRunOptions, type VersionSync } from './sync-version';

export type { MirrorRunOptions };

/**
 * `mirror sync`: copies upstream provider versions into the mirror, verified
 * as Terraform's installer verifies them, per version × platform:
 * download document → archive (streamed to a temp file) → SHA-256 equals
 * `shasum` and the archive's SHA256SUMS line → SHA256SUMS.sig verifies with a
 * key of `signing_keys` → the zip holds the provider executable → h1.
 *
 * A version is stored only when every platform fetched for it verified
 * (archives, the upstream SHA256SUMS and .sig, documents, record), and the
 * provider's lists are rebuilt last, so a killed sync leaves the mirror as it
 * was or with whole versions added. Platforms already held are not
 * downloaded again; their upstream `shasum` is still compared with ours and a
 * difference is refused loudly (mirrored bytes never change).
 */

export interface SyncRequest {
  address: ProviderAddress;
  /** Terraform version constraint ("" = every release). */
  constraints: string;
  /** Platforms to mirror; empty = every platform each version lists. */
  platforms: Platform[];
}

/** Syncs every request; never throws for a provider's failure (it is in the summary), only for store errors. */
export async function syncProviders(requests: readonly SyncRequest[], options: MirrorRunOptions): Promise<MirrorSummary> {
  const log = options.log ?? (() => {});
  const work = makeSyncWorkDir();
  const limit = limiter(Math.max(1, options.concurrency ?? 4));
  try {
    const providers: ProviderSummary[] = [];
    for (const request of requests) providers.push(await syncProvider(request, options, work, limit, log));
    const ok = providers.every((p) => p.status !== 'failed');
    return { command: 'sync', dry_run: !!options.dryRun, ok, providers, upstream_requests: { ...options.http.counts } };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function syncProvider(
  request: SyncRequest,
  options: MirrorRunOptions,
  work: string,
  limit: Limiter,
  log: (line: string) => void,
): Promise<ProviderSummary> {
  const { address } = request;
  const name = formatAddress(address);
  const failed = (reason: string): ProviderSummary => {
    log(`${name}: failed: ${reason}`);
    return { address: name, status: 'failed', reason, versions: [] };
  };
  if (address.hostname === options.ownHostname) {
    return failed(
      `${address.hostname} is this registry's own hostname (REGISTRY_HOSTNAME): its providers are already served by the mirror; mirror other registries only`,
    );
  }
  let selected: { version: string; protocols: string[]; platforms: Platform[] }[];
  let base: string;
  try {
    const constraints = parseConstraints(request.constraints);
    base = await discoverProviders(options.http, address.hostname, options.providersServiceFor?.(address.hostname));
    const versions = await listVersions(options.http, base, address);
    const matching = versions.filter((v) => meetsConstraints(v.version, constraints));
    const order = sortVersions(matching.map((v) => v.version));
    selected = order.map((version) => matching.find((v) => v.version === version)!);
    log(
      `${name}: ${selected.length} of ${versions.length} versions match "${request.constraints || '(any)'}"${selected.length ? `: ${order.join(', ')}` : ''}`,
    );
  } catch (error) {
    return failed((error as Error).message);
  }

  const versions: VersionSummary[] = await writeUnderProviderLease(
    options.store,
    address,
    { command: 'mirror sync', dryRun: !!options.dryRun, log },
    (lease) => {
      // One versions-document room for the provider: the versions this sync adds are checked together (1 KV read).
      const room = versionsDocumentRoom(options.store.kv, address);
      return Promise.all(
        selected.map((entry) => syncVersion({ address, base, listed: entry, requested: request.platforms, options, work, limit, log, lease, room })),
      );
    },
  );
  const summary: ProviderSummary = { address: name, status: combinedStatus(versions.map((v) => v.status)), versions };
  if (selected.length === 0) {
    summary.status = 'failed';
    summary.reason = `no version of ${name} matches "${request.constraints}"`;
  }
  const counts = (status: string) => versions.filter((v) => v.status === status).length;
  log(
    `${name}: ${counts('mirrored')} versions mirrored, ${counts('unchanged')} up to date, ${counts('failed')} failed, ${counts('skipped')} skipped${options.dryRun ? ` (dry run: ${counts('planned')} to fetch)` : ''}`,
  );
  return summary;
}

/** The per-platform outcomes of one version as they are decided, and the version's summary from them. */
class VersionOutcome {
  readonly platforms: PlatformSummary[] = [];
  constructor(
    private readonly version: string,
    private readonly label: string,
    private readonly log: (line: string) => void,
  ) {}

  done(reason?: string): VersionSummary {
    const { version, platforms } = this;
    platforms.sort((a, b) => a.platform.localeCompare(b.platform));
    const status = reason ? 'failed' : combinedStatus(platforms.map((p) => p.status));
    return reason ? { version, status, reason, platforms } : { version, status, platforms };
  }

  /** The version is not mirrored: every platform not decided yet is failed (or unchanged when held). */
  fail(reason: string, available: readonly Platform[], held: ReadonlyMap<string, PackageRecord>): VersionSummary {
    this.log(`${this.label}: NOT mirrored: ${reason}`);
    for (const p of available) {
      const already = this.platforms.find((s) => s.platform === platformName(p));
      if (!already)
        this.platforms.push({
          platform: platformName(p),
          status: held.has(platformName(p)) ? 'unchanged' : 'failed',
          ...(held.has(platformName(p)) ? {} : { reason }),
        });
    }
    return this.done(reason);
  }
}

async function syncVersion(sync: VersionSync): Promise<VersionSummary> {
  const { address, base, listed, requested, options, limit, log } = sync;
  const { version } = listed;
  const label = `${formatAddress(address)} ${version}`;
  const outcome = new VersionOutcome(version, label, log);
  const offered = new Set(listed.platforms.map(platformName));
  const wanted = requested.length ? requested : listed.platforms;
  const available = wanted.filter((p) => {
    if (offered.has(platformName(p))) return true;
    outcome.platforms.push({ platform: platformName(p), status: 'skipped', reason: `${version} is not published for ${platformName(p)} upstream` });
    log(`${label}: skipped ${platformName(p)}: not published upstream for this version`);
    return false;
  });
  if (available.length === 0) return outcome.done();

  const existing = await readVersionRecord(options.store, address, version);
  const held = new Map((existing?.packages ?? []).map((p) => [`${p.os}_${p.arch}`, p]));
  const fail = (reason: string) => outcome.fail(reason, available, held);

  // Documents first (small): also for held platforms, to notice an upstream that changed its bytes.
  let documents: UpstreamPackage[];
  try {
    documents = await Promise.all(available.map((p) => limit(() => findPackage(options.http, base, address, version, p))));
  } catch (error) {
    return fail((error as Error).message);
  }
  for (const doc of documents) {
    const ours = held.get(platformName(doc.platform));
    if (ours && ours.shasum !== doc.shasum) {
      const reason = `UPSTREAM CHANGED: ${doc.documentUrl} now gives shasum ${doc.shasum} for ${platformName(doc.platform)}, the mirror holds ${ours.shasum} (${ours.h1}); mirrored bytes never change — kept ours; investigate the upstream`;
      log(`${label}: ${reason}`);
      outcome.platforms.push({ platform: platformName(doc.platform), status: 'failed', reason });
    }
  }
  if (outcome.platforms.some((p) => p.status === 'failed')) return fail('the upstream changed a mirrored package (see the platform)');
  const missing = documents.filter((doc) => !held.has(platformName(doc.platform)));
  for (const doc of documents) {
    const ours = held.get(platformName(doc.platform));
    if (ours) outcome.platforms.push({ platform: platformName(doc.platform), status: 'unchanged', h1: ours.h1, zh: zhHash(ours.shasum), size: ours.size });
  }
  if (missing.length === 0) return outcome.done();
  if (options.dryRun) {
    for (const doc of missing) {
      outcome.platforms.push({ platform: platformName(doc.platform), status: 'planned' });
      log(`${label}: would fetch ${doc.downloadUrl}`);
    }
    return outcome.done();
  }
  const versionDir = mkdtempSync(join(sync.work, `${version}-`));
  try {
    return await fetchAndStore(sync, { label, existing, missing, versionDir, outcome, fail });
  } finally {
    rmSync(versionDir, { recursive: true, force: true });
  }
}

/**
 * The missing platforms of a version: its SHA256SUMS and signature verified
 * (and unchanged from what the mirror holds), every archive downloaded and
 * verified, then stored whole with storeMirroredVersion — or nothing stored.
 */
async function fetchAndStore(
  sync: VersionSync,
  v: {
    label: string;
    existing: VersionRecord | null;
    missing: UpstreamPackage[];
    versionDir: string;
    outcome: VersionOutcome;
    fail: (reason: string) => VersionSummary;
  },
): Promise<VersionSummary> {
  const { address, options, limit, log } = sync;
  const { version } = sync.listed;
  const { label, existing, missing, outcome, fail } = v;
  const fetched = await fetchSums(sync, existing, missing);
  if ('failed' in fetched) return fail(fetched.failed);
  const { first, sums, signature, signer } = fetched;
  const sumLines = readSums(sums, first.shasumsUrl);

  const verified: { pkg: PackageRecord; path: string }[] = [];
  const results = await Promise.allSettled(
    missing.map((doc) =>
      limit(async () => {
        const path = join(v.versionDir, `${platformName(doc.platform)}.zip`);
        const pkg = await downloadVerified(options.http, doc, path, sumLines, { address, version, label }, log);
        verified.push({ pkg, path });
        log(`  ${label} ${platformName(doc.platform)}: verified (${(pkg.size / 1e6).toFixed(1)} MB, signed by ${signer.key_id}, ${pkg.h1})`);
      }),
    ),
  );
  const failures = results.flatMap((r, i) => (r.status === 'rejected' ? [{ doc: missing[i]!, reason: (r.reason as Error).message }] : []));
  for (const { doc, reason } of failures) outcome.platforms.push({ platform: platformName(doc.platform), status: 'failed', reason });
  if (failures.length > 0) {
    for (const { pkg } of verified)
      outcome.platforms.push({
        platform: `${pkg.os}_${pkg.arch}`,
        status: 'failed',
        reason: 'verified, but another platform of this version failed: the version is mirrored whole or not at all',
      });
    return fail(failures.map((f) => f.reason).join('; '));
  }
  try {
    await storeVerified(sync, { label, existing, first, signer, sums, signature, verified });
  } catch (error) {
    return fail((error as Error).message);
  }
  for (const { pkg } of verified) {
    outcome.platforms.push({ platform: `${pkg.os}_${pkg.arch}`, status: 'mirrored', h1: pkg.h1, zh: zhHash(pkg.shasum), size: pkg.size });
  }
  log(`${label}: mirrored ${verified.map((x) => `${x.pkg.os}_${x.pkg.arch}`).join(', ')}`);
  return outcome.done();
}
