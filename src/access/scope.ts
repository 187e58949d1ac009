import { parseHostname } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { parseModuleName } from '../protocol/modules-v1';
import type { TokenRecord } from '../store/tokens/read';

/**
 * The one scope rule: what a credential's stored grants reach. Read tokens
 * (and sign-in sessions, LOGIN_POLICY), publish tokens and trusted
 * publishers all store grants as strings, parsed by `parseScope` and matched
 * by `scopeGrants`, here and nowhere else. A grant string is read in one of
 * three forms, by the record field it is stored in:
 *
 *   read       (a read token's `scopes`)
 *     "*"               everything this Worker serves, any hostname
 *     "NAMESPACE"       that namespace of this registry (REGISTRY_HOSTNAME), in
 *                       the registry API and in the mirror
 *     "HOST/NAMESPACE"  that namespace at HOST: how a scope names mirrored
 *                       upstream providers, e.g. "registry.terraform.io/hashicorp"
 *     "HOST/*"          every namespace at HOST, e.g. "registry.terraform.io/*"
 *   namespace  (a publish token's `scopes` when created --namespace-wide)
 *     "NAMESPACE"       every package of that namespace of this registry
 *     "*"               every namespace of this registry
 *   package    (a publish token's or a trusted publisher's `packages`)
 *     "NS/TYPE"         one provider (`acme/thing`), as in `required_providers`
 *     "NS/NAME/SYSTEM"  one module (`acme/vpc/aws`), as in a module source
 *     `*` in TYPE, NAME or SYSTEM matches any run of characters within that
 *     part (`acme/thing-*`, `acme/vpc/*`); a pattern whose TYPE or NAME is only
 *     `*` would cover the whole namespace and is refused: that is
 *     `--namespace-wide`.
 *
 * What a grant reaches is a hostname, a namespace and, for a package grant,
 * the parts after the namespace; it matches a place (a read of a namespace at
 * a hostname, or a write of a package of this registry) when each of those is
 * equal or the grant's `*` for it. Whole parts only: "acme" never grants
 * "acme-evil", HOST never grants a hostname that merely starts with HOST, a
 * bare NAMESPACE never grants that namespace at another hostname, a package
 * grant never grants a read of its namespace nor a package of the other kind
 * (the number of parts tells providers from modules), and `*` never stands
 * for a namespace in a package grant nor for a hostname in HOST/NAMESPACE.
 * Everything is compared in lower case, as addresses are normalised. A stored
 * string that is not a valid grant of its form grants nothing.
 */

/** Which grammar a stored grant string is read with: the record field it comes from (see above). */
export type ScopeForm = 'read' | 'namespace' | 'package';

/** The package a publish or lifecycle request writes: a provider of this registry, or a module. */
export type PackageRef = { kind: 'provider'; namespace: string; type: string } | { kind: 'module'; namespace: string; name: string; system: string };

/**
 * What a request reaches: a namespace at a hostname, and for a write the package's parts after the namespace
 * ([TYPE] for a provider, [NAME, SYSTEM] for a module). A read has no `package`.
 */
export interface Place {
  hostname: string;
  namespace: string;
  package?: readonly string[];
}

/** The place a publish or lifecycle request on `ref` writes: a package of this registry, `registryHostname`. */
export function packagePlace(ref: PackageRef, registryHostname: string): Place {
  return {
    hostname: registryHostname,
    namespace: ref.namespace,
    package: ref.kind === 'provider' ? [ref.type] : [ref.name, ref.system],
  };
}

/** `NS/TYPE` of a provider, `NS/NAME/SYSTEM` of a module (lower case): how rights, messages and the audit name a package. */
export function packageName(ref: PackageRef): string {
  return (ref.kind === 'provider' ? `${ref.namespace}/${ref.type}` : `${ref.namespace}/${ref.name}/${ref.system}`).toLowerCase();
}

/** A grant taken apart: `host` null = this registry's; `anyHost` = every hostname; `namespace` "*" = every namespace; `package` null = every package. */
interface Reach {
  readonly anyHost: boolean;
  readonly host: string | null;
  readonly namespace: string;
  readonly package: readonly string[] | null;
}

/**
 * Taken-apart grants and compiled package patterns, per isolate: a credential's grants are the same strings on
 * every request, so each is taken apart (reachOf) and each pattern compiled (partMatches) once, not per request.
 * What is kept is the structure of a string, decided by the string alone; bounded, emptied when full.
 */
const KEPT_MAX = 1024;
const reaches = new Map<string, Reach | null>();
const matchers = new Map<string, RegExp>();

function kept<Value>(map: Map<string, Value>, key: string, make: () => Value): Value {
  const hit = map.get(key);
  if (hit !== undefined) return hit;
  if (map.size >= KEPT_MAX) map.clear();
  const value = make();
  map.set(key, value);
  return value;
}

/**
 * The structure of a grant string of `form`, or null when it has no valid structure for that form (then it grants
 * nothing). Parts are not validated here (parseScope does that before anything is stored); a `*` only means "every"
 * where the grammar allows it.
 */
function reachOf(scope: string, form: ScopeForm): Reach | null {
  const parts = scope.split('/');
  if (parts.some((part) => part === '')) return null;
  if (form === 'read') {
    if (scope === '*') return { anyHost: true, host: null, namespace: '*', package: null };
    if (parts.length === 1) return parts[0]!.includes('*') ? null : { anyHost: false, host: null, namespace: parts[0]!, package: null };
    if (parts.length !== 2 || parts[0]!.includes('*') || (parts[1]!.includes('*') && parts[1] !== '*')) return null;
    return { anyHost: false, host: parts[0]!, namespace: parts[1]!, package: null };
  }
  if (form === 'namespace') {
    if (parts.length !== 1 || (parts[0]!.includes('*') && parts[0] !== '*')) return null;
    return { anyHost: false, host: null, namespace: parts[0]!, package: null };
  }
  if ((parts.length !== 2 && parts.length !== 3) || parts[0]!.includes('*')) return null;
  return { anyHost: false, host: null, namespace: parts[0]!, package: parts.slice(1) };
}

const PACKAGE_PART = /^[a-z0-9_*-]{1,64}$/;

/**
 * Validates and normalises (trimmed, lower case) one grant as an operator gives it, for storing in a record field of
 * `form`; `option` names where it was given (`--namespace`, `--publish`, `--package`, a LOGIN_POLICY rule) in the
 * message. Returns the string to store. Throws InputError naming the fix for:
 *   read: anything but "*", NAMESPACE, HOST/NAMESPACE or HOST/* with a valid hostname and namespace;
 *   namespace: anything but "*" or a namespace of this registry (HOST/NS and packages are refused);
 *   package: anything but NS/TYPE or NS/NAME/SYSTEM; a bare NS (say --namespace-wide); a namespace that is a
 *     pattern or invalid; a part of other characters than letters, digits, `-`, `_` and `*`; a TYPE or NAME that
 *     is only `*` (namespace-wide: say --namespace-wide instead).
 */
export function parseScope(raw: string, form: ScopeForm, option = '--namespace'): string {
  if (form === 'package') return parsePackagePart(raw, option);
  const scope = raw.trim();
  if (scope === '*') return '*';
  const parts = scope.split('/');
  // Module namespaces may also hold underscores (a superset of provider namespaces); one scope grants both.
  if (parts.length === 1) return parseModuleName(parts[0]!, 'namespace');
  if (form === 'namespace') {
    throw new InputError(`${option} "${raw}" with --namespace-wide: give namespaces of this registry (NS, or "*" for all), not packages or HOST/NS`);
  }
  if (parts.length === 2) {
    const host = parseHostname(parts[0]!);
    return parts[1] === '*' ? `${host}/*` : `${host}/${parseModuleName(parts[1]!, 'namespace')}`;
  }
  throw new InputError(`scope "${raw}" must be "*", NAMESPACE, HOST/NAMESPACE or HOST/*`);
}

function parsePackagePart(raw: string, option: string): string {
  const pattern = raw.trim().toLowerCase();
  const segments = pattern.split('/');
  const shape = `${option} "${raw}" must name a package: NS/TYPE for a provider (acme/thing) or NS/NAME/SYSTEM for a module (acme/vpc/aws), '*' allowed in the last parts`;
  if (segments.length === 1 && segments[0]) throw new InputError(`${shape}; for every package of ${segments[0]}, add --namespace-wide`);
  if (segments.length !== 2 && segments.length !== 3) throw new InputError(shape);
  const [namespace, ...rest] = segments as [string, ...string[]];
  if (namespace.includes('*')) throw new InputError(`${option} "${raw}": the namespace cannot be a pattern; give one credential per namespace`);
  try {
    parseModuleName(namespace, 'namespace');
  } catch (error) {
    throw new InputError(`${option} "${raw}": ${(error as Error).message}`);
  }
  if (!rest.every((segment) => PACKAGE_PART.test(segment))) throw new InputError(shape);
  if (/^\*+$/.test(rest[0]!)) {
    throw new InputError(
      `${option} "${raw}" would cover every ${segments.length === 2 ? 'provider' : 'module'} of ${namespace}: name the packages, or give --namespace-wide to allow the whole namespace explicitly`,
    );
  }
  return pattern;
}

/**
 * True when one of `scopes` (grant strings of `form`, as stored) reaches `place`; `registryHostname` is the
 * hostname a grant without HOST refers to. The one match of the rule above: whole parts, compared in lower case,
 * `*` only where the form allows it. Never throws; a malformed stored string grants nothing.
 */
export function scopeGrants(scopes: readonly string[], form: ScopeForm, place: Place, registryHostname: string): boolean {
  const own = registryHostname.toLowerCase();
  const hostname = place.hostname.toLowerCase();
  const namespace = place.namespace.toLowerCase();
  const pkg = place.package?.map((part) => part.toLowerCase());
  return scopes.some((scope) => {
    const reach = kept(reaches, `${form}\n${scope}`, () => reachOf(scope, form));
    if (reach === null) return false;
    if (!reach.anyHost && hostname !== (reach.host ?? own)) return false;
    if (reach.namespace !== '*' && reach.namespace !== namespace) return false;
    if (reach.package === null) return true;
    return pkg !== undefined && pkg.length === reach.package.length && reach.package.every((pattern, i) => partMatches(pattern, pkg[i]!));
  });
}

/** `*` = any run of characters within the part; everything else literal. */
function partMatches(pattern: string, part: string): boolean {
  return kept(matchers, pattern, () => {
    const source = pattern
      .split('*')
      .map((piece) => piece.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
      .join('.*');
    return new RegExp(`^${source}$`);
  }).test(part);
}

/** What a credential may write. `namespaces`: namespace-form grants ("*" = every namespace); `packages`: package-form grants. */
export interface PublishRights {
  namespaces: readonly string[];
  packages: readonly string[];
}

/** True when `rights` allow writing `ref`, a package of this registry (`registryHostname`): a namespace grant or a package grant reaching it. */
export function rightsAllow(rights: PublishRights, ref: PackageRef, registryHostname: string): boolean {
  const place = packagePlace(ref, registryHostname);
  return scopeGrants(rights.namespaces, 'namespace', place, registryHostname) || scopeGrants(rights.packages, 'package', place, registryHostname);
}

/** What a publish token may write: its packages, or its scopes' namespaces when created --namespace-wide; nothing for one created before per-package rights. */
export function tokenRights(record: Pick<TokenRecord, 'scopes' | 'packages' | 'namespaceWide'>): PublishRights {
  return { namespaces: record.namespaceWide ? record.scopes : [], packages: record.packages ?? [] };
}

/** True when the rights allow nothing at all (a record stored before per-package rights, not yet narrowed). */
export function rightsEmpty(rights: PublishRights): boolean {
  return rights.namespaces.length === 0 && rights.packages.length === 0;
}

/** One phrase for listings, messages and audit entries: `packages acme/thing, acme/vpc/aws` or `NAMESPACE-WIDE acme`. */
export function describeRights(rights: PublishRights): string {
  const parts = [];
  if (rights.namespaces.length) parts.push(`NAMESPACE-WIDE ${rights.namespaces.join(', ')}`);
  if (rights.packages.length) parts.push(`packages ${rights.packages.join(', ')}`);
  return parts.join('; ') || 'no packages (stored before per-package rights: publishes nothing)';
}
