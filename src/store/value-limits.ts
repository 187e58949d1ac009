import { formatAddress, type ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { formatModuleAddress, type ModuleAddress } from '../protocol/modules-v1';
import { providerVersionsBody } from '../protocol/providers-v1';
import { moduleCatalogKey, versionsDocumentKey } from './layout';
import type { ModuleCatalog } from './modules/types';
import type { KvStore } from './store';

/**
 * Workers KV takes values of at most 25 MiB (KV "Limits"); a larger one makes the binding throw. Two values
 * grow with every version and are rewritten by every publish after its commit: a provider's versions document
 * (providers.v1's list of every version with its platforms, which Terraform reads whole) and a hostname's
 * module catalogue (`module-catalog/HOST`, every module with its version strings). A write past the limit would
 * throw after the version was committed (a 5xx, a version committed but not listed), so a new version is checked
 * against them at its publish's start, before any upload or write, and so is a mirrored version gaining a
 * platform (versionsDocumentRoom's take with the stored entry). Withdrawn versions leave both values.
 */
export const KV_MAX_VALUE_BYTES = 25 * 1024 * 1024;

const MIB = 1024 * 1024;
const bytes = (text: string) => new TextEncoder().encode(text).byteLength;
const mib = (n: number) => `${(n / MIB).toFixed(2)} MiB`;
const EMPTY_VERSIONS = bytes(providerVersionsBody([]));

/** A version a provider publish or mirror adds: its entry in the versions document. */
export interface ListedVersion {
  version: string;
  protocols: readonly string[];
  platforms: readonly { os: string; arch: string }[];
}

/** A version record's entry in the versions document. */
export function listedVersion(record: { version: string; protocols: readonly string[]; packages: readonly { os: string; arch: string }[] }): ListedVersion {
  return { version: record.version, protocols: record.protocols, platforms: record.packages };
}

/** The bytes `entry` adds to a versions document: its JSON and a separating comma. */
export function versionsEntryBytes(entry: ListedVersion): number {
  return bytes(providerVersionsBody([{ version: entry.version, protocols: [...entry.protocols], platforms: [...entry.platforms] }])) - EMPTY_VERSIONS + 1;
}

/** The room left in a provider's versions document for the versions a run adds before its lists are rebuilt. */
export interface VersionsDocumentRoom {
  /**
   * Throws InputError (400) when the versions document, with `entry` and every entry taken before added, would
   * pass the limit; otherwise counts `entry` in. `stored`: the version's entry as stored now, when it is stored
   * (a mirrored version gaining platforms): then only the platforms of `entry` it lacks count. Call it before
   * anything of the version is written.
   */
  take(entry: ListedVersion, stored?: ListedVersion | null): Promise<void>;
}

/** `stored` with the platforms of `entry` it lacks. */
function grown(stored: ListedVersion, entry: ListedVersion): ListedVersion {
  const held = new Set(stored.platforms.map((p) => `${p.os}_${p.arch}`));
  return { ...stored, platforms: [...stored.platforms, ...entry.platforms.filter((p) => !held.has(`${p.os}_${p.arch}`))] };
}

/**
 * The room in `address`'s versions document under `limit` bytes (KV's value limit; a lower one only in tests):
 * the stored document is read once (1 KV read, at the first take; its size: ~600 bytes per version of 14
 * platforms) and each version taken is counted against what is left. A mirror sync makes one per provider, so its
 * versions (stored before the lists are rebuilt once) are checked together with 1 read, not each with its own read
 * against a document that does not hold the others.
 */
export function versionsDocumentRoom(kv: Pick<KvStore, 'get'>, address: ProviderAddress, limit = KV_MAX_VALUE_BYTES): VersionsDocumentRoom {
  let document: Promise<string | null> | undefined;
  let added = 0;
  let taken = 0;
  return {
    async take(entry, stored) {
      // A stored version grows by the platforms it gains (nothing when it gains none); a new one by its whole entry.
      const next = stored ? grown(stored, entry) : entry;
      const grows = versionsEntryBytes(next) - (stored ? versionsEntryBytes(stored) : 0);
      if (grows === 0) return;
      document ??= kv.get(versionsDocumentKey(address), 'text');
      const text = await document;
      const would = (text === null ? EMPTY_VERSIONS : bytes(text)) + added + grows;
      if (would <= limit) {
        added += grows;
        if (!stored) taken++;
        return;
      }
      const count = (text === null ? 0 : (JSON.parse(text) as { versions: unknown[] }).versions.length) + taken;
      const name = formatAddress(address);
      const gained = stored ? next.platforms.length - stored.platforms.length : 0;
      const what = stored ? `${entry.version} (${gained} more platform${gained === 1 ? '' : 's'})` : entry.version;
      throw new InputError(
        `${name} ${what}: ${name} has ${count} versions; its versions document would be ${mib(would)}, over Workers KV's ${mib(limit)} value limit: withdraw old versions (npm run lifecycle -- withdraw ${address.namespace}/${address.type} --version V --message "…"; withdrawn versions leave the list) before publishing more; of a provider mirrored from another registry, remove old ones (npm run mirror -- remove ${name} --version V)`,
      );
    },
  };
}

/**
 * Throws InputError (400) when the provider's versions document, with `entry` added, would pass `limit` bytes
 * (KV's value limit; a lower one only in tests): one take of a fresh versionsDocumentRoom (1 KV read). Call it for
 * a version not yet committed, before anything is written.
 */
export async function checkVersionsDocumentRoom(
  kv: Pick<KvStore, 'get'>,
  address: ProviderAddress,
  entry: ListedVersion,
  limit = KV_MAX_VALUE_BYTES,
): Promise<void> {
  await versionsDocumentRoom(kv, address, limit).take(entry);
}

/**
 * Throws InputError (400) when the hostname's module catalogue, with `version` of the module added, would pass
 * `limit` bytes (KV's value limit; a lower one only in tests). Reads the stored catalogue (1 KV read, its size:
 * ~130 bytes per module version of 128 characters); call it for a version not yet committed.
 */
export async function checkModuleCatalogRoom(kv: Pick<KvStore, 'get'>, address: ModuleAddress, version: string, limit = KV_MAX_VALUE_BYTES): Promise<void> {
  const stored = await kv.get(moduleCatalogKey(address.hostname), 'text');
  // A new version adds `,"VERSION"`; a new module its whole entry and a comma (the bound, so the catalogue is
  // parsed only when near the limit).
  const entry = bytes(JSON.stringify({ namespace: address.namespace, name: address.name, system: address.system, versions: [version] })) + 1;
  const size = stored === null ? bytes('{"modules":[]}') : bytes(stored);
  if (size + entry <= limit) return;
  const catalog = JSON.parse(stored ?? '{"modules":[]}') as ModuleCatalog;
  const known = catalog.modules.some((m) => m.namespace === address.namespace && m.name === address.name && m.system === address.system);
  const would = size + (known ? bytes(JSON.stringify(version)) + 1 : entry);
  if (would <= limit) return;
  const count = catalog.modules.reduce((n, m) => n + m.versions.length, 0);
  throw new InputError(
    `${formatModuleAddress(address)} ${version}: the module catalogue of ${address.hostname} lists ${count} module versions; it would be ${mib(would)}, over Workers KV's ${mib(limit)} value limit: withdraw old module versions (npm run lifecycle -- withdraw NS/NAME/SYSTEM --version V --message "…"; withdrawn versions leave the catalogue) before publishing more`,
  );
}
