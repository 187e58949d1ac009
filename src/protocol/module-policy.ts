import { InputError } from './errors';
import { parseHostname, truncate } from './address';
import { meetsConstraints, type VersionConstraint } from './constraints';
import { ruleEntry } from './policy-entry';
import { parseModuleName, parseModuleSystem, type ModuleAddress } from './modules-v1';

/**
 * The module part of the pull-through policy (src/protocol/mirror-policy.ts): which
 * upstream registry modules this registry proxies, and under which of our
 * namespaces.
 *
 *   "modules": [
 *     { "source": "registry.terraform.io/terraform-aws-modules/*\/*", "versions": ">= 5" },
 *     { "source": "registry.terraform.io/cloudposse/label/null", "versions": "~> 0.25", "as": "cp" }
 *   ]
 *
 * The first serves `OUR-HOST/terraform-aws-modules/vpc/aws` from
 * `registry.terraform.io/terraform-aws-modules/vpc/aws`; the second serves
 * `OUR-HOST/cp/label/null`. `source` is HOST/NAMESPACE/NAME/SYSTEM (or
 * NAMESPACE/NAME/SYSTEM for registry.terraform.io); `*` stands for a whole
 * name or system, never the hostname or namespace (a proxy namespace maps
 * one upstream namespace). `as` is our namespace (default: the upstream's).
 */

export interface ModuleRule {
  /** Upstream registry hostname. */
  hostname: string;
  /** Upstream namespace. */
  namespace: string;
  /** null = `*` */
  name: string | null;
  system: string | null;
  /** Our namespace the upstream's modules appear under. */
  as: string;
  /** The constraint as written. */
  versions: string;
  constraints: VersionConstraint[];
}

/** What the policy allows for one of our module addresses. */
export interface ModuleAllowance {
  /** The upstream module our address stands for. */
  upstream: ModuleAddress;
  allows(version: string): boolean;
}

const ENTRY_FIELDS = ['$comment', 'source', 'versions', 'as'];

/**
 * Parses the `modules` array. Throws InputError naming `where`, the entry and
 * the fix for: not an array, an unknown field, a `source` that is not
 * HOST/NS/NAME/SYSTEM or NS/NAME/SYSTEM (or a `*` in the hostname, the
 * namespace or inside a name), a malformed `versions` or `as`, and two rules
 * giving one of our namespaces different upstream namespaces.
 */
export function parseModuleRules(value: unknown, where: string, defaultHost: string): ModuleRule[] {
  if (!Array.isArray(value)) throw new InputError(`${where}: "modules" must be an array of { "source", "versions" } entries`);
  const rules = value.map((raw: unknown, index: number) => {
    const at = `${where}: modules[${index}]`;
    const { entry, source, versions, constraints } = ruleEntry(raw, at, ENTRY_FIELDS, 'registry.terraform.io/terraform-aws-modules/*/*', '>= 5');
    const pattern = parseModulePattern(source, `${at}.source`, defaultHost);
    let as = pattern.namespace;
    if (entry.as !== undefined) {
      if (typeof entry.as !== 'string') throw new InputError(`${at}.as: expected our namespace as a string`);
      as = named(() => parseModuleName(entry.as as string, 'namespace'), `${at}.as`);
    }
    return { ...pattern, as, versions, constraints };
  });
  const upstreamOf = new Map<string, string>();
  for (const rule of rules) {
    const upstream = `${rule.hostname}/${rule.namespace}`;
    const earlier = upstreamOf.get(rule.as);
    if (earlier !== undefined && earlier !== upstream) {
      throw new InputError(
        `${where}: our namespace "${rule.as}" is given two upstreams (${earlier} and ${upstream}); give one of them another namespace with "as"`,
      );
    }
    upstreamOf.set(rule.as, upstream);
  }
  return rules;
}

/** The rule as written back by formatPolicy. */
export function formatModuleRule(rule: ModuleRule): Record<string, string> {
  return {
    source: `${rule.hostname}/${rule.namespace}/${rule.name ?? '*'}/${rule.system ?? '*'}`,
    versions: rule.versions,
    ...(rule.as !== rule.namespace ? { as: rule.as } : {}),
  };
}

/**
 * What `rules` allow for `address` (one of our module addresses), or null
 * when no rule proxies it.
 */
export function moduleAllowanceFor(rules: readonly ModuleRule[], address: ModuleAddress): ModuleAllowance | null {
  const matching = rules.filter(
    (rule) => rule.as === address.namespace && (rule.name === null || rule.name === address.name) && (rule.system === null || rule.system === address.system),
  );
  if (matching.length === 0) return null;
  const { hostname, namespace } = matching[0]!;
  return {
    upstream: { hostname, namespace, name: address.name, system: address.system },
    allows: (version) => matching.some((rule) => meetsConstraints(version, rule.constraints)),
  };
}

function parseModulePattern(raw: string, where: string, defaultHost: string): Pick<ModuleRule, 'hostname' | 'namespace' | 'name' | 'system'> {
  const parts = raw.split('/');
  if (parts.length !== 3 && parts.length !== 4) {
    throw new InputError(`${where}: "${truncate(raw)}" must be HOST/NAMESPACE/NAME/SYSTEM or NAMESPACE/NAME/SYSTEM (use * for a whole name or system)`);
  }
  const [host, namespace, name, system] = parts.length === 4 ? parts : [defaultHost, ...parts];
  if (host!.includes('*')) throw new InputError(`${where}: "${truncate(raw)}": the hostname cannot be a pattern; name the upstream registry`);
  if (namespace!.includes('*'))
    throw new InputError(`${where}: "${truncate(raw)}": the namespace cannot be a pattern; a proxy namespace maps one upstream namespace`);
  const part = <T>(value: string, what: string, parse: (v: string) => T): T | null => {
    if (value === '*') return null;
    if (value.includes('*')) throw new InputError(`${where}: "${truncate(raw)}": * stands for a whole ${what}, not part of one`);
    return named(() => parse(value), where);
  };
  return {
    hostname: named(() => parseHostname(host!), where),
    namespace: named(() => parseModuleName(namespace!, 'namespace'), where),
    name: part(name!, 'name', (v) => parseModuleName(v, 'name')),
    system: part(system!, 'system', parseModuleSystem),
  };
}

function named<T>(parse: () => T, where: string): T {
  try {
    return parse();
  } catch (error) {
    throw new InputError(`${where}: ${(error as Error).message}`);
  }
}
