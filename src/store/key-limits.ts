import type { ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import type { ModuleAddress } from '../protocol/modules-v1';
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
 * Workers KV takes keys of at most 512 bytes (KV "Limits"); a longer one makes the binding throw, which
 * would surface as a 5xx in the middle of a publish. The names the registry accepts (a 253-character
 * hostname, 64-character names, a 128-character version) can together pass it, so a publish is checked
 * against the longest key it would write before anything is read or written.
 */
export const KV_MAX_KEY_BYTES = 512;
/** Room kept for a platform (OS_ARCH) in a download document's key: Terraform's longest today has 13 characters. */
const PLATFORM_ROOM = 32;
/** The longest path segment a route accepts (src/http/responses.ts pathSegment): an upload's file name in its URL. */
const MAX_SEGMENT = 256;

const bytes = (key: string) => new TextEncoder().encode(key).byteLength;

function refuse(what: string, longest: number): never {
  throw new InputError(
    `${what}: its longest storage key would be ${longest} bytes, and Workers KV takes keys of at most ${KV_MAX_KEY_BYTES} bytes; use a shorter version (pre-release and build metadata count) or shorter names`,
  );
}

/** Throws InputError (400) when a KV key the store writes for this provider version would pass 512 bytes. */
export function checkProviderKeys(address: ProviderAddress, version: string, what: string): void {
  const platform = { os: 'o'.repeat(PLATFORM_ROOM / 2), arch: 'a'.repeat(PLATFORM_ROOM / 2 - 1) };
  const keys = [
    downloadDocumentKey(address, version, platform),
    versionRecordKey(address, version),
    mirrorVersionKey(address, version),
    docsKey(address, version),
  ];
  const longest = Math.max(...keys.map(bytes));
  if (longest > KV_MAX_KEY_BYTES) refuse(what, longest);
}

/**
 * Throws InputError (400) when a KV key the store writes for this module version would pass 512 bytes, or
 * its package's name (NAME-SYSTEM-VERSION.tar.gz) would be too long for the upload's URL.
 */
export function checkModuleKeys(address: ModuleAddress, version: string, what: string): void {
  const longest = Math.max(...[moduleDownloadKey(address, version), moduleRecordKey(address, version), moduleDocsKey(address, version)].map(bytes));
  if (longest > KV_MAX_KEY_BYTES) refuse(what, longest);
  const filename = encodeURIComponent(moduleArchiveFilename(address, version, 'tar.gz'));
  if (filename.length > MAX_SEGMENT) {
    throw new InputError(
      `${what}: its package's name would be ${filename.length} characters in the upload's URL (at most ${MAX_SEGMENT}); use a shorter version (pre-release and build metadata count) or shorter names`,
    );
  }
}
