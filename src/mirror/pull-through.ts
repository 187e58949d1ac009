import type { Env } from '../env';
import { settings } from '../config';
import type { ProviderAddress } from '../protocol/address';
import { formatAddress } from '../protocol/address';
import { platformName } from '../protocol/platform';
import { checkProviderKeys } from '../store/key-limits';
import { readPolicy } from '../store/mirror/policy';
import { readManifest, writeManifest, type PullManifest } from '../store/mirror/pull';
import { buildManifest } from './manifest';
import { allowanceFor, providersServiceFor, type MirrorPolicy, type ProviderAllowance } from '../protocol/mirror-policy';
import { discoverProviders, listVersions, type UpstreamVersion } from './upstream';
import { DEFAULT_LIMITS, UpstreamClient, UpstreamError, type UpstreamLimits } from './upstream-http';

/**
 * What a pull-through request needs, and the isolate's memory of it: the
 * policy (re-read after INDEX_CACHE_SECONDS), the upstream's version list
 * (kept UPSTREAM_LIST_MS: the bounded time an upstream release takes to be
 * listed) and verified manifests (kept in R2; rebuilt from the upstream after
 * MANIFEST_REFRESH_MS when a VERSION.json asks, to notice a changed upstream).
 */

export const UPSTREAM_LIST_MS = 5 * 60_000;
export const MANIFEST_REFRESH_MS = 60 * 60_000;

export interface PullContext {
  env: Env;
  address: ProviderAddress;
  policy: MirrorPolicy;
  allowance: ProviderAllowance;
  http: UpstreamClient;
  /** How old a stored manifest may be before a VERSION.json rebuilds it (PULL_REFRESH_SECONDS, default MANIFEST_REFRESH_MS). */
  refreshMs: number;
}

const memory = new Map<string, { value: unknown; expires: number }>();

/** A value `remember` kept in this isolate, or undefined once its time is up. */
export function remembered<T>(key: string): T | undefined {
  const entry = memory.get(key);
  if (!entry) return undefined;
  if (entry.expires <= Date.now()) {
    memory.delete(key);
    return undefined;
  }
  return entry.value as T;
}

/** Keeps `value` in this isolate for `ttlMs` (at most 512 entries, oldest first out); the pull-through and module proxy share it. */
export function remember(key: string, value: unknown, ttlMs: number): void {
  if (memory.size >= 512) memory.delete(memory.keys().next().value!);
  memory.set(key, { value, expires: Date.now() + ttlMs });
}

/** Forgets everything this isolate remembers (tests, the bench: a fresh isolate). */
export function forgetPullThroughMemory(): void {
  memory.clear();
}

/** The stored policy (null: none), read from KV at most once per INDEX_CACHE_SECONDS per isolate; InputError for a damaged one. */
export async function storedPolicy(env: Env): Promise<MirrorPolicy | null> {
  let policy = remembered<MirrorPolicy | null>('policy');
  if (policy === undefined) {
    policy = await readPolicy(env.REGISTRY_KV);
    remember('policy', policy, Math.max(settings(env).listTtlMs, 1000));
  }
  return policy;
}

/**
 * The pull-through context of `address`, or null when pull-through does not
 * apply: no policy stored, our own hostname, or no rule of the policy
 * matches. Reads the policy from KV at most once per INDEX_CACHE_SECONDS per isolate.
 */
export async function pullContext(env: Env, address: ProviderAddress): Promise<PullContext | null> {
  if (address.hostname === settings(env).hostname) return null;
  const policy = await storedPolicy(env);
  if (!policy) return null;
  const allowance = allowanceFor(policy, address);
  if (!allowance) return null;
  const limits = upstreamLimits(env);
  const refreshMs = settings(env).pullRefreshMs ?? MANIFEST_REFRESH_MS;
  return { env, address, policy, allowance, http: new UpstreamClient(limits), refreshMs };
}

/** How long an isolate reuses an upstream's version list: PULL_LIST_SECONDS, default UPSTREAM_LIST_MS. */
export function upstreamListMs(env: Env): number {
  return settings(env).pullListMs ?? UPSTREAM_LIST_MS;
}

/** The upstream client limits: DEFAULT_LIMITS, or PULL_TIMEOUT_SECONDS for every timeout. */
export function upstreamLimits(env: Env): UpstreamLimits {
  const ms = settings(env).pullTimeoutMs;
  return ms === null ? DEFAULT_LIMITS : { ...DEFAULT_LIMITS, timeoutMs: ms, idleMs: ms };
}

/** The upstream's providers.v1 base and versions of the provider (isolate memory for UPSTREAM_LIST_MS); throws UpstreamError. */
export async function upstreamVersions(pull: PullContext): Promise<{ base: string; versions: UpstreamVersion[] }> {
  const key = `versions:${formatAddress(pull.address)}`;
  const known = remembered<{ base: string; versions: UpstreamVersion[] }>(key);
  if (known) return known;
  const base = await discoverProviders(pull.http, pull.address.hostname, providersServiceFor(pull.policy, pull.address.hostname));
  const value = { base, versions: await listVersions(pull.http, base, pull.address) };
  remember(key, value, upstreamListMs(pull.env));
  return value;
}

/** Versions the policy allows that the upstream offers with at least one allowed platform. */
export function allowedUpstreamVersions(pull: PullContext, versions: readonly UpstreamVersion[]): UpstreamVersion[] {
  return versions.filter((v) => pull.allowance.allows(v.version) && allowedPlatforms(pull, v).length > 0);
}

function allowedPlatforms(pull: PullContext, offered: UpstreamVersion) {
  const wanted = pull.allowance.platformsFor(offered.version);
  return offered.platforms.filter((p) => wanted === null || wanted.has(platformName(p)));
}

/**
 * The verified manifest of an allowed `version`: from the isolate, else R2
 * (any age when `maxAgeMs` is infinite, else younger than it), else built
 * from the upstream (buildManifest's checks) and stored in R2. Throws
 * KeyTooLongError (404) when the version's KV keys would pass 512 bytes (checkProviderKeys, before anything
 * else), UpstreamError (404 when the upstream does not offer the version).
 */
export async function manifestFor(pull: PullContext, version: string, maxAgeMs = pull.refreshMs): Promise<PullManifest> {
  // Every pull (VERSION.json, an archive, an OCI manifest) starts here: a version whose keys could not be stored
  // is refused (KeyTooLongError 'read', 404) before the upstream is asked or anything is written.
  checkProviderKeys(pull.address, version, `${formatAddress(pull.address)} ${version}`, 'read');
  const key = `manifest:${formatAddress(pull.address)}/${version}`;
  const fresh = (m: PullManifest) => Date.now() - Date.parse(m.verifiedAt) < maxAgeMs;
  const known = remembered<PullManifest>(key);
  if (known && fresh(known)) return known;
  const stored = await readManifest(pull.env.REGISTRY_R2, pull.address, version);
  if (stored && fresh(stored)) {
    remember(key, stored, Math.min(60_000, pull.refreshMs));
    return stored;
  }
  const { base, versions } = await upstreamVersions(pull);
  const offered = versions.find((v) => v.version === version);
  if (!offered) {
    throw new UpstreamError(`${formatAddress(pull.address)} ${version} is not offered by ${pull.address.hostname}`, 404);
  }
  const manifest = await buildManifest(pull.http, base, pull.address, version, allowedPlatforms(pull, offered));
  await writeManifest(pull.env.REGISTRY_R2, manifest);
  remember(key, manifest, Math.min(60_000, pull.refreshMs));
  return manifest;
}
