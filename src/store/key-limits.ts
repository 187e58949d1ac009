import type { ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import type { ModuleAddress } from '../protocol/modules-v1';
import { KeyTooLongError } from './errors';
import {
  docsKey,
  downloadDocumentKey,
  mirrorVersionKey,
  moduleArchiveFilename,
  moduleDocsKey,
  moduleDownloadKey,
  moduleRecordKey,
  versionRecordKey,
} from './layout';

/**
 * Workers KV takes keys of at most 512 bytes (KV "Limits"); a longer one makes the binding throw, which would
 * surface as a 5xx. The names the registry accepts (a 253-character hostname, 64-character names, a
 * 128-character version) can together pass it. One rule (checkKvKey) at two chokepoints:
 * - every KV operation of the Worker goes through keyLimitedKv (installed once on the Env by withKvKeyLimits in
 *   src/index.ts), so a read of a name whose key cannot fit is refused with KeyTooLongError 'read' (404: nothing
 *   can be stored under it) before the binding is asked, whatever route or page built the key;
 * - a new version (publish, mirror, pull-through, module proxy) is checked against the longest key it would
 *   write before anything is fetched or written (checkProviderKeys, checkModuleKeys), so a refused write
 *   leaves nothing behind.
 */
export const KV_MAX_KEY_BYTES = 512;
/** Room kept for a platform (OS_ARCH) in a download document's key: Terraform's longest today has 13 characters. */
const PLATFORM_ROOM = 32;
/** The longest path segment a route accepts (src/http/responses.ts pathSegment): an upload's file name in its URL. */
const MAX_SEGMENT = 256;

const encoder = new TextEncoder();
const bytes = (key: string) => encoder.encode(key).byteLength;
/** The longest (UTF-8) of `keys`. */
const longestOf = (keys: readonly string[]) => keys.reduce((a, b) => (bytes(b) > bytes(a) ? b : a));

/**
 * The one KV key-length rule. Throws KeyTooLongError (`access`: 'read' → 404, 'write' → 400) naming the
 * key's size, the limit and the fix when `key` is over KV_MAX_KEY_BYTES in UTF-8; `what` names the thing
 * asked for (default: the start of the key).
 */
export function checkKvKey(key: string, access: 'read' | 'write', what?: string): void {
  if (key.length * 3 <= KV_MAX_KEY_BYTES) return; // at most 3 UTF-8 bytes per UTF-16 unit: fits without counting
  const size = bytes(key);
  if (size <= KV_MAX_KEY_BYTES) return;
  const subject = what ?? `"${key.slice(0, 60)}…"`;
  throw new KeyTooLongError(
    access === 'read'
      ? `${subject}: no such name can exist here: its storage key would be ${size} bytes, and Workers KV takes keys of at most ${KV_MAX_KEY_BYTES} bytes (use shorter names or a shorter version)`
      : `${subject}: its longest storage key would be ${size} bytes, and Workers KV takes keys of at most ${KV_MAX_KEY_BYTES} bytes; use a shorter version (pre-release and build metadata count) or shorter names`,
    access,
  );
}

/** The KV methods taking keys, and whether each reads or writes. */
const KEYED: Readonly<Record<string, 'read' | 'write'>> = { get: 'read', getWithMetadata: 'read', put: 'write', delete: 'write' };
const limited = new WeakMap<KVNamespace, KVNamespace>();

/**
 * `kv` with checkKvKey before every keyed operation (get and getWithMetadata as reads, put and delete as
 * writes; a bulk get checks each key): an over-long key rejects with KeyTooLongError and never reaches the
 * binding. Everything else passes through unchanged. One wrapper per binding object (memoised).
 */
export function keyLimitedKv(kv: KVNamespace): KVNamespace {
  let wrapped = limited.get(kv);
  if (wrapped) return wrapped;
  const methods = new Map<PropertyKey, unknown>();
  wrapped = new Proxy(kv, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let method = methods.get(prop);
      if (method === undefined) {
        const access = typeof prop === 'string' ? KEYED[prop] : undefined;
        const call = value as (...args: unknown[]) => unknown;
        method = access
          ? async (key: string | string[], ...rest: unknown[]) => {
              for (const k of Array.isArray(key) ? key : [key]) checkKvKey(k, access);
              return call.call(target, key, ...rest);
            }
          : call.bind(target);
        methods.set(prop, method);
      }
      return method;
    },
  });
  limited.set(kv, wrapped);
  return wrapped;
}

const limitedEnvs = new WeakMap<object, object>();

/** `env` with its REGISTRY_KV behind keyLimitedKv (memoised per Env object): what src/index.ts hands every route. */
export function withKvKeyLimits<E extends { REGISTRY_KV: KVNamespace }>(env: E): E {
  let wrapped = limitedEnvs.get(env) as E | undefined;
  if (!wrapped) {
    wrapped = { ...env, REGISTRY_KV: keyLimitedKv(env.REGISTRY_KV) };
    limitedEnvs.set(env, wrapped);
  }
  return wrapped;
}

/**
 * Throws KeyTooLongError (`access` 'write' by default: 400; 'read' for a pull-through a GET started: 404) when a
 * KV key the store writes for this provider version would pass 512 bytes (checkKvKey on the longest).
 */
export function checkProviderKeys(address: ProviderAddress, version: string, what: string, access: 'read' | 'write' = 'write'): void {
  const platform = { os: 'o'.repeat(PLATFORM_ROOM / 2), arch: 'a'.repeat(PLATFORM_ROOM / 2 - 1) };
  const keys = [
    downloadDocumentKey(address, version, platform),
    versionRecordKey(address, version),
    mirrorVersionKey(address, version),
    docsKey(address, version),
  ];
  checkKvKey(longestOf(keys), access, what);
}

/**
 * Throws KeyTooLongError (400) when a KV key the store writes for this module version would pass 512 bytes
 * (checkKvKey on the longest), or InputError (400) when its package's name (NAME-SYSTEM-VERSION.tar.gz) would be
 * too long for the upload's URL.
 */
export function checkModuleKeys(address: ModuleAddress, version: string, what: string): void {
  checkKvKey(longestOf([moduleDownloadKey(address, version), moduleRecordKey(address, version), moduleDocsKey(address, version)]), 'write', what);
  const filename = encodeURIComponent(moduleArchiveFilename(address, version, 'tar.gz'));
  if (filename.length > MAX_SEGMENT) {
    throw new InputError(
      `${what}: its package's name would be ${filename.length} characters in the upload's URL (at most ${MAX_SEGMENT}); use a shorter version (pre-release and build metadata count) or shorter names`,
    );
  }
}
