import { InputError } from '../protocol/errors';
import { parseModuleName } from '../protocol/modules-v1';
import type { TokenRecord } from '../store/tokens/read';

/**
 * Publish rights per package: what a publish token or a trusted CI publisher
 * may publish and change (publishes, lifecycle changes). A credential names
 * packages, never a whole namespace unless the operator said so explicitly
 * (`--namespace-wide`, shown by `token list`, `publisher list` and the audit):
 *
 *   NS/TYPE            one provider (`acme/thing`), as in `required_providers`
 *   NS/NAME/SYSTEM     one module (`acme/vpc/aws`), as in a module source
 *   `*` in TYPE, NAME or SYSTEM matches any run of characters
 *   (`acme/thing-*`, `acme/vpc/*`); a pattern whose TYPE or NAME is only `*`
 *   would cover every provider or module of the namespace and is refused:
 *   that is `--namespace-wide`.
 *
 * A provider pattern never matches a module and the reverse (the number of
 * segments tells them apart). Everything is compared in lower case, as
 * addresses are normalised. This file is the one place rights are matched:
 * src/access/publish-auth.ts (publish tokens) and ci-token.ts (trusted
 * publishers) both call `rightsAllow`.
 */

/** The package a publish or lifecycle request writes: a provider of this registry, or a module. */
export type PackageRef = { kind: 'provider'; namespace: string; type: string } | { kind: 'module'; namespace: string; name: string; system: string };

/** What a credential may write. `namespaces`: namespace-wide grants ("*" = every namespace); `packages`: patterns as above. */
export interface PublishRights {
  namespaces: readonly string[];
  packages: readonly string[];
}

/** `NS/TYPE` of a provider, `NS/NAME/SYSTEM` of a module (lower case): how rights, messages and the audit name a package. */
export function packageName(ref: PackageRef): string {
  return (ref.kind === 'provider' ? `${ref.namespace}/${ref.type}` : `${ref.namespace}/${ref.name}/${ref.system}`).toLowerCase();
}

const SEGMENT = /^[a-z0-9_*-]{1,64}$/;

/**
 * Validates and normalises (lower case) one package pattern as given to
 * `--package` / `--publish`. Throws InputError naming `option` for: not
 * NS/TYPE or NS/NAME/SYSTEM, a bad namespace (no `*` there), a segment of
 * other characters than letters, digits, `-`, `_` and `*`, and a TYPE or NAME
 * that is only `*` (namespace-wide: say --namespace-wide instead).
 */
export function parsePackagePattern(raw: string, option: string): string {
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
  if (!rest.every((segment) => SEGMENT.test(segment))) throw new InputError(shape);
  if (/^\*+$/.test(rest[0]!)) {
    throw new InputError(
      `${option} "${raw}" would cover every ${segments.length === 2 ? 'provider' : 'module'} of ${namespace}: name the packages, or give --namespace-wide to allow the whole namespace explicitly`,
    );
  }
  return pattern;
}

/** True when `rights` allow writing `ref`: a namespace-wide grant of its namespace (or "*"), or a package pattern matching it. */
export function rightsAllow(rights: PublishRights, ref: PackageRef): boolean {
  const namespace = ref.namespace.toLowerCase();
  if (rights.namespaces.some((ns) => ns === '*' || ns === namespace)) return true;
  const name = packageName(ref);
  const segments = name.split('/').length;
  return rights.packages.some((pattern) => pattern.split('/').length === segments && globMatches(pattern, name));
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

/** `*` = any run of characters within the segment it is in; everything else literal. */
function globMatches(pattern: string, name: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
    .join('[^/]*');
  return new RegExp(`^${source}$`).test(name);
}
