import { InputError } from './errors';

/** A provider source address, normalised to lower case: hostname/namespace/type. */
export interface ProviderAddress {
  hostname: string;
  namespace: string;
  type: string;
}

const MAX_NAME_LENGTH = 64;
const MAX_HOSTNAME_LENGTH = 253;
// Terraform's ParseProviderPart: letters, digits and dashes, no leading or trailing dash.
const NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOSTNAME_PATTERN = new RegExp(`^${LABEL}(?:\\.${LABEL})*(?::[0-9]{1,5})?$`);

/**
 * Normalises a namespace or type name the way Terraform does (case-insensitive,
 * stored lower case). Throws InputError naming `what` when the name is empty,
 * longer than 64 characters, or has characters other than letters, digits and
 * inner dashes.
 */
export function parseProviderName(raw: string, what: 'namespace' | 'type'): string {
  const name = raw.toLowerCase();
  if (name.length === 0) throw new InputError(`${what} is empty`);
  if (name.length > MAX_NAME_LENGTH) {
    throw new InputError(`${what} "${truncate(raw)}" is longer than ${MAX_NAME_LENGTH} characters`);
  }
  if (!NAME_PATTERN.test(name)) {
    throw new InputError(`${what} "${truncate(raw)}" is invalid: use letters, digits and dashes, not starting or ending with a dash`);
  }
  if (what === 'type' && name.startsWith('terraform-provider-')) {
    throw new InputError(`type "${raw}" must not include the "terraform-provider-" prefix`);
  }
  return name;
}

/**
 * Normalises a registry hostname (optionally with :port) to lower case.
 * Throws InputError for anything that is not a DNS name.
 */
export function parseHostname(raw: string): string {
  const hostname = raw.toLowerCase();
  if (hostname.length === 0) throw new InputError('hostname is empty');
  if (hostname.length > MAX_HOSTNAME_LENGTH) throw new InputError(`hostname "${truncate(raw)}" is too long`);
  if (!HOSTNAME_PATTERN.test(hostname)) {
    throw new InputError(`hostname "${truncate(raw)}" is not a valid registry hostname`);
  }
  return hostname;
}

/** Builds a normalised address; throws InputError for the first invalid part. */
export function providerAddress(hostname: string, namespace: string, type: string): ProviderAddress {
  return {
    hostname: parseHostname(hostname),
    namespace: parseProviderName(namespace, 'namespace'),
    type: parseProviderName(type, 'type'),
  };
}

/**
 * Parses "hostname/namespace/type" or "namespace/type" (hostname then
 * defaults to `defaultHostname`). Throws InputError otherwise.
 */
export function parseSourceAddress(source: string, defaultHostname: string): ProviderAddress {
  const parts = source.split('/');
  if (parts.length === 2) return providerAddress(defaultHostname, parts[0]!, parts[1]!);
  if (parts.length === 3) return providerAddress(parts[0]!, parts[1]!, parts[2]!);
  throw new InputError(`provider address "${truncate(source)}" must be hostname/namespace/type or namespace/type`);
}

export function formatAddress(address: ProviderAddress): string {
  return `${address.hostname}/${address.namespace}/${address.type}`;
}

export function truncate(value: string, max = 80): string {
  const printable = value.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return printable.length > max ? `${printable.slice(0, max)}…` : printable;
}
