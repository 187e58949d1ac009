import { bytesToHex } from '@noble/hashes/utils.js';
import type { Env } from '../../env';
import { settings } from '../../config';
import { InputError } from '../../protocol/errors';
import { formatModuleAddress, type ModuleAddress } from '../../protocol/modules-v1';
import { moduleArchiveFilename, moduleLeaseName } from '../../store/layout';
import { withLease } from '../../store/lease';
import { publishModuleVersion } from '../../store/modules/write';
import { readModuleRecord } from '../../store/modules/record';
import { checkNewModuleVersion } from '../../store/module-limits';
import type { ModuleVersionRecord } from '../../store/modules/types';
import { storeFromEnv, type Store } from '../../store/store';
import { appendAuditEntry } from '../../store/audit/write';
import type { AuditOutcome } from '../../store/audit/entry';
import { PULL_ACTOR } from '../changes';
import { moduleAllowanceFor, type ModuleAllowance } from '../../protocol/module-policy';
import type { MirrorPolicy } from '../../protocol/mirror-policy';
import { remember, remembered, storedPolicy, upstreamLimits, upstreamListMs } from '../pull-through';
import { UpstreamClient, UpstreamError } from '../upstream-http';
import { proxiedModuleDocs } from './docs';
import { readArchive } from './read-archive';
import { repackModule } from './repack';
import { packageSource, requireHttps, withArchivesOverride } from './source';
import { discoverModules, listModuleVersions, moduleLocation } from './upstream';

/**
 * The module proxy (README "Module proxy"): a module of ours in a namespace
 * the stored policy's `modules` maps to an upstream registry lists the
 * upstream's allowed versions, and the first download of a version fetches
 * its package, makes it a module package of ours (src/mirror/modules/repack.ts)
 * and publishes it with src/store's publishModuleVersion under the module's
 * lease (package, documents, the R2 record as commit point, list, catalog):
 * from then on it is an ordinary, immutable module version, served from R2
 * with the upstream gone. Nothing is stored unless every check passed.
 */

/**
 * Largest upstream package fetched (compressed; MODULE_PROXY_MAX_MB lowers
 * it), and largest unpacked module (twice that): the package, its unpacked
 * tar and the repacked one are in memory at once, within a Worker's 128 MB
 * (public modules are kilobytes to a few MB).
 */
const MAX_PACKAGE_BYTES = 16 * 1024 * 1024;

/** The package limit in force: MODULE_PROXY_MAX_MB when set to a smaller positive number, else MAX_PACKAGE_BYTES. */
function packageLimit(env: Env): number {
  return Math.min(MAX_PACKAGE_BYTES, settings(env).moduleProxyMaxBytes ?? MAX_PACKAGE_BYTES);
}

export interface ModuleProxyContext {
  env: Env;
  store: Store;
  /** Our address of the module. */
  address: ModuleAddress;
  allowance: ModuleAllowance;
  policy: MirrorPolicy;
  http: UpstreamClient;
}

/**
 * The proxy context of `address` (ours), or null when no stored policy
 * proxies it — also when the matching rule's upstream is this registry's own
 * hostname: proxying ourselves would only fetch our own answers in a loop
 * (pull-through ignores our hostname the same way).
 */
export async function moduleProxyContext(env: Env, address: ModuleAddress): Promise<ModuleProxyContext | null> {
  const policy = await storedPolicy(env);
  if (!policy || policy.modules.length === 0) return null;
  const allowance = moduleAllowanceFor(policy.modules, address);
  if (!allowance || allowance.upstream.hostname === settings(env).hostname) return null;
  return { env, store: storeFromEnv(env), address, allowance, policy, http: new UpstreamClient(upstreamLimits(env)) };
}

const upstreamLabel = (proxy: ModuleProxyContext) => formatModuleAddress(proxy.allowance.upstream);

/** How a refusal names a proxied version: "HOST/NS/NAME/SYSTEM VERSION (proxied from UPSTREAM)". */
export const proxiedLabel = (proxy: ModuleProxyContext, version: string) =>
  `${formatModuleAddress(proxy.address)} ${version} (proxied from ${upstreamLabel(proxy)})`;

/** The upstream's modules.v1 base, discovered once per PULL_LIST_SECONDS per isolate (a list and the first download that follows share it). */
async function modulesBase(proxy: ModuleProxyContext): Promise<string> {
  const host = proxy.allowance.upstream.hostname;
  const key = `modules.v1:${host}`;
  const known = remembered<string>(key);
  if (known) return known;
  const base = await discoverModules(proxy.http, host, proxy.policy.hosts[host]?.['modules.v1']);
  remember(key, base, upstreamListMs(proxy.env));
  return base;
}

/** The upstream's versions the policy allows (isolate memory for PULL_LIST_SECONDS, default 5 min); throws UpstreamError. */
export async function allowedUpstreamModuleVersions(proxy: ModuleProxyContext): Promise<string[]> {
  const key = `module versions:${upstreamLabel(proxy)}`;
  let versions = remembered<string[]>(key);
  if (!versions) {
    versions = await listModuleVersions(proxy.http, await modulesBase(proxy), proxy.allowance.upstream);
    remember(key, versions, upstreamListMs(proxy.env));
  }
  return versions.filter((v) => proxy.allowance.allows(v));
}

/**
 * The committed record of `version`, proxying it first when it is not held:
 * under the module's lease (a concurrent first download waits, then finds
 * it committed), the upstream's download answer, the package source
 * (src/mirror/modules/source.ts; `hosts[HOST].archives` applied), the bytes
 * (at most packageLimit, PULL_TIMEOUT_SECONDS between chunks), the
 * repacked package and its docs, then publishModuleVersion. Records the
 * outcome in the audit log (module.proxy). Throws InputError (400, before
 * the upstream is asked and with nothing written) when the version would not
 * fit KV's limits (checkNewModuleVersion: a key over 512 bytes, the module
 * catalogue over 25 MiB), UpstreamError (404 unknown
 * version, 422 a source it cannot fetch, 502 a broken upstream or package,
 * 504 a timeout), LeaseBusyError (409) after waiting 60 s.
 */
export async function proxiedModuleRecord(proxy: ModuleProxyContext, version: string): Promise<ModuleVersionRecord> {
  const { store, address } = proxy;
  const label = `${formatModuleAddress(address)} ${version}`;
  // KV's limits before any read of the version's keys, the upstream is asked or anything written (the lease
  // included): the publish API's check. Callers come here for a version they did not find held.
  await checkNewModuleVersion(store.kv, address, version, proxiedLabel(proxy, version));
  const held = await readModuleRecord(store, address, version);
  if (held) return held;
  return withLease(
    store.blobs,
    moduleLeaseName(address),
    {
      owner: { host: 'worker', pid: 0, processStartedAt: ISOLATE_STARTED, purpose: `module proxy ${label} from ${upstreamLabel(proxy)}` },
      maxWaitMs: 60_000,
    },
    async (lease) => {
      const committed = await readModuleRecord(store, address, version);
      if (committed) return committed; // pulled by the request we waited for
      const found = { source: '' };
      try {
        const fetched = await fetchPackage(proxy, version, found);
        const repacked = await repackFetched(fetched, packageLimit(proxy.env));
        const record = await publishRepacked(proxy, version, repacked.bytes, repacked.texts, lease);
        await audit(
          proxy,
          label,
          'ok',
          `proxied from ${upstreamLabel(proxy)} (${found.source}, fetched ${fetched.url}); ${repacked.fileCount} files repacked`,
          {
            [record.filename]: record.sha256,
          },
        );
        return record;
      } catch (error) {
        const why = (error as Error).message;
        console.warn(`module proxy: ${label}: not stored: ${why}`);
        if (!(error instanceof UpstreamError && error.status === 404)) {
          await audit(
            proxy,
            label,
            error instanceof UpstreamError ? 'refused' : 'failed',
            `from ${upstreamLabel(proxy)}${found.source ? ` (${found.source})` : ''}: ${why}`,
          );
        }
        throw error;
      }
    },
  );
}

/** A module package as fetched from where the upstream's download answer points. */
interface FetchedPackage {
  /** The URL the bytes came from (after redirects). */
  url: string;
  bytes: Uint8Array;
  where: ReturnType<typeof packageSource>;
}

/**
 * The upstream's download answer for `version`, its package source (`found.source` names it as soon as it is
 * known, for the audit of a failure), and the bytes: https only unless the policy names the host, checked on the
 * first URL and on every redirect hop (an archives override is the operator's choice), at most packageLimit. Throws UpstreamError.
 */
async function fetchPackage(proxy: ModuleProxyContext, version: string, found: { source: string }): Promise<FetchedPackage> {
  const { location, url } = await moduleLocation(proxy.http, await modulesBase(proxy), proxy.allowance.upstream, version);
  const where = packageSource(location, url);
  found.source = where.described;
  const named = (host: string) => proxy.policy.hosts[host] !== undefined;
  const fetchUrl = withArchivesOverride(requireHttps(where.url, named, where.described), (host) => proxy.policy.hosts[host]?.archives);
  // Every hop, not only the first and the last: one plain-http hop in the middle is enough to change the bytes.
  const everyHop = fetchUrl === where.url ? (url: string) => void requireHttps(url, named, where.described) : undefined;
  const opened = await proxy.http.openArchive(fetchUrl, `module package of ${upstreamLabel(proxy)} ${version}`, everyHop);
  const bytes = await readArchive(opened.response, packageLimit(proxy.env), proxy.http.limits.idleMs, opened.url);
  return { url: opened.url, bytes, where };
}

/** The fetched package repacked as this registry serves modules; a package that fails its checks is the upstream's fault (UpstreamError). */
async function repackFetched({ url, bytes, where }: FetchedPackage, limit: number): Promise<Awaited<ReturnType<typeof repackModule>>> {
  try {
    return await repackModule(bytes, where.format, { stripTop: where.stripTop, subdir: where.subdir, label: url, maxUnpackedBytes: 2 * limit });
  } catch (error) {
    if (error instanceof InputError) throw new UpstreamError(`package check failed: ${error.message}`);
    throw error;
  }
}

/** Commits the repacked package and its docs as `version` through publishModuleVersion, under the held lease. */
async function publishRepacked(
  proxy: ModuleProxyContext,
  version: string,
  bytes: Uint8Array,
  texts: Parameters<typeof proxiedModuleDocs>[0],
  lease: Parameters<Parameters<typeof withLease>[3]>[0],
): Promise<ModuleVersionRecord> {
  const sha256 = bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
  const record: ModuleVersionRecord = {
    address: proxy.address,
    version,
    filename: moduleArchiveFilename(proxy.address, version, 'tar.gz'),
    format: 'tar.gz',
    sha256,
    size: bytes.length,
    publishedAt: new Date().toISOString(),
    proxiedFrom: formatModuleAddress(proxy.allowance.upstream),
  };
  const content = { sha256Hex: sha256, size: record.size, contentType: 'application/gzip', open: () => bytes };
  await publishModuleVersion(proxy.store, record, proxiedModuleDocs(texts), content, () => {}, { lease });
  return record;
}

const ISOLATE_STARTED = new Date().toISOString();

async function audit(proxy: ModuleProxyContext, target: string, outcome: AuditOutcome, reason: string, digests?: Record<string, string>): Promise<void> {
  try {
    await appendAuditEntry(
      { blobs: proxy.env.REGISTRY_R2 },
      { actor: PULL_ACTOR, action: 'module.proxy', target, outcome, reason: reason.slice(0, 2000), ...(digests ? { digests } : {}) },
    );
  } catch (error) {
    console.error(`module proxy: could not write the audit entry (${target}): ${(error as Error).message}`);
  }
}
