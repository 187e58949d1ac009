import { InputError } from './errors';
import { parseHostname, truncate } from './address';

/**
 * The module registry protocol (modules.v1): module addresses and the wire
 * shapes the registry answers with. See
 * shared/reference/module-registry-protocol.md.
 */

/** A module address, normalised to lower case: hostname/namespace/name/system. */
export interface ModuleAddress {
  hostname: string;
  namespace: string;
  name: string;
  system: string;
}

const MAX_NAME_LENGTH = 64;
// Letters, digits, dashes and underscores, starting and ending with a letter or digit.
const MODULE_NAME_PATTERN = /^[a-z0-9](?:[a-z0-9_-]*[a-z0-9])?$/;
const SYSTEM_PATTERN = /^[a-z0-9]+$/;

/**
 * Normalises a module namespace or name (clients compare case-insensitively;
 * stored lower case). Throws InputError naming `what` when it is empty, over
 * 64 characters, or not letters/digits/dashes/underscores starting and ending
 * with a letter or digit.
 */
export function parseModuleName(raw: string, what: 'namespace' | 'name'): string {
  const name = raw.toLowerCase();
  if (name.length === 0) throw new InputError(`module ${what} is empty`);
  if (name.length > MAX_NAME_LENGTH) throw new InputError(`module ${what} "${truncate(raw)}" is longer than ${MAX_NAME_LENGTH} characters`);
  if (!MODULE_NAME_PATTERN.test(name)) {
    throw new InputError(
      `module ${what} "${truncate(raw)}" is invalid: use letters, digits, dashes and underscores, starting and ending with a letter or digit`,
    );
  }
  return name;
}

/**
 * Normalises a module's target system ("aws"; the protocol's "provider"
 * part). Throws InputError unless it is 1–64 letters and digits.
 */
export function parseModuleSystem(raw: string): string {
  const system = raw.toLowerCase();
  if (system.length === 0) throw new InputError('module system is empty');
  if (system.length > MAX_NAME_LENGTH) throw new InputError(`module system "${truncate(raw)}" is longer than ${MAX_NAME_LENGTH} characters`);
  if (!SYSTEM_PATTERN.test(system))
    throw new InputError(`module system "${truncate(raw)}" is invalid: use letters and digits only (like aws, azurerm, google)`);
  return system;
}

/** Builds a normalised module address; throws InputError for the first invalid part. */
export function moduleAddress(hostname: string, namespace: string, name: string, system: string): ModuleAddress {
  return {
    hostname: parseHostname(hostname),
    namespace: parseModuleName(namespace, 'namespace'),
    name: parseModuleName(name, 'name'),
    system: parseModuleSystem(system),
  };
}

/** "hostname/namespace/name/system", the module's source address. */
export function formatModuleAddress(address: ModuleAddress): string {
  return `${address.hostname}/${address.namespace}/${address.name}/${address.system}`;
}

/** The archive formats a module package may have; the file name's extension tells go-getter how to unpack it. */
export type ModuleArchiveFormat = 'tar.gz' | 'zip';

/** Wire shape of "list available versions" (only `modules[0]` is read by clients). */
export interface ModuleVersionsBody {
  modules: [{ versions: { version: string }[] }];
}

/** The list-versions body for `versions` (any order; sent newest first). */
export function moduleVersionsBody(versions: readonly string[]): ModuleVersionsBody {
  return { modules: [{ versions: versions.map((version) => ({ version })) }] } satisfies ModuleVersionsBody;
}

/** Where this registry serves modules.v1 (path-absolute). */
export const MODULES_V1_PATH = '/v1/modules/';

/** Header carrying the download location in the 204 answer of "download a specific version". */
export const TERRAFORM_GET_HEADER = 'X-Terraform-Get';

/** Wire shape of the stored per-version download document: where the package is. */
export interface ModuleDownloadBody {
  /** Path-absolute URL of the package (resolved by the client against the download request). */
  location: string;
}

export function moduleDownloadBody(location: string): ModuleDownloadBody {
  return { location } satisfies ModuleDownloadBody;
}
