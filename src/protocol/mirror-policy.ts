import { InputError } from './errors';
import { parseHostname, parseProviderName, truncate, type ProviderAddress } from './address';
import { meetsConstraints, type VersionConstraint } from './constraints';
import { parsePlatformName, platformName, type Platform } from './platform';
import { formatModuleRule, parseModuleRules, type ModuleRule } from './module-policy';
import { isObject, refuseUnknown, ruleEntry } from './policy-entry';

/**
 * The pull-through policy (`npm run mirror -- policy set mirror.json`): which
 * upstream providers the Worker may fetch on first request. The format is
 * mirror.json's (README "The allow-list") plus what pull-through needs:
 *
 *   {
 *     "platforms": ["linux_amd64", "darwin_arm64"],
 *     "providers": [
 *       { "source": "registry.terraform.io/hashicorp/*", "versions": ">= 4" },
 *       { "source": "upstream.test/acme/thing", "versions": "~> 1.0", "platforms": ["linux_amd64"] }
 *     ],
 *     "hosts": { "upstream.test": { "providers.v1": "http://127.0.0.1:8443/v1/providers/" } }
 *   }
 *
 * `source` may use `*` for the whole namespace or type (never the hostname);
 * `hosts` replaces service discovery for a hostname, as a Terraform CLI
 * `host` block does; its `archives` replaces `https://HOST/` in module
 * package URLs (codeload.github.com for GitHub sources: src/mirror/modules/).
 * `modules` lists proxied module namespaces (module-policy.ts);
 * a policy needs `providers`, `modules` or both. Unknown fields are refused everywhere, so a typo never
 * silently widens or narrows what the mirror fetches.
 */

export const DEFAULT_UPSTREAM = 'registry.terraform.io';

export interface ProviderRule {
  hostname: string;
  /** null = `*` */
  namespace: string | null;
  type: string | null;
  /** The constraint as written (shown by `policy show`). */
  versions: string;
  constraints: VersionConstraint[];
  /** Empty = every platform the upstream offers. */
  platforms: Platform[];
}

export interface HostServices {
  'providers.v1'?: string;
  'modules.v1'?: string;
  /** Base URL replacing https://HOST/ for module packages fetched from HOST. */
  archives?: string;
}

export interface MirrorPolicy {
  rules: ProviderRule[];
  /** Proxied module namespaces. */
  modules: ModuleRule[];
  hosts: Record<string, HostServices>;
}

/** What the policy allows for one provider. */
export interface ProviderAllowance {
  /** True when the version meets the constraint of at least one matching rule. */
  allows(version: string): boolean;
  /** Platforms allowed for `version` (union of the matching rules that allow it); null = every platform upstream offers. */
  platformsFor(version: string): Set<string> | null;
}

const TOP_FIELDS = ['$comment', 'platforms', 'providers', 'modules', 'hosts'];
const ENTRY_FIELDS = ['$comment', 'source', 'versions', 'platforms'];
const SERVICE_FIELDS = ['providers.v1', 'modules.v1', 'archives'];

/**
 * Parses policy text. Throws InputError naming `source`, the JSON path and
 * the fix for: not JSON, not an object, an unknown field at any level, no
 * non-empty `providers` and no `modules`, a malformed `modules` entry, a `source` that is not HOST/NS/TYPE or NS/TYPE
 * (or uses `*` in the hostname or inside a name), a missing or malformed
 * `versions` constraint, an unknown platform, a `hosts` entry that is not a
 * hostname or whose service URL is not absolute https (http only on loopback).
 */
export function parsePolicy(text: string, source: string): MirrorPolicy {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InputError(`${source}: not JSON (${(error as Error).message})`);
  }
  if (!isObject(json)) throw new InputError(`${source}: expected an object with a "providers" array`);
  refuseUnknown(json, TOP_FIELDS, source);
  const defaults = platformList(json.platforms, `${source}: platforms`);
  const modules = json.modules === undefined ? [] : parseModuleRules(json.modules, source, DEFAULT_UPSTREAM);
  const providers = json.providers === undefined && modules.length > 0 ? [] : json.providers;
  if (!Array.isArray(providers) || (providers.length === 0 && modules.length === 0)) {
    throw new InputError(`${source}: "providers" must be a non-empty array of { "source", "versions" } entries (or give "modules")`);
  }
  const rules = providers.map((raw: unknown, index: number) => {
    const where = `${source}: providers[${index}]`;
    const { entry, source: pattern, versions, constraints } = ruleEntry(raw, where, ENTRY_FIELDS, 'registry.terraform.io/hashicorp/*', '>= 4');
    return {
      ...parsePattern(pattern, `${where}.source`),
      versions,
      constraints,
      platforms: entry.platforms === undefined ? defaults : platformList(entry.platforms, `${where}.platforms`),
    };
  });
  const hosts: Record<string, HostServices> = {};
  if (json.hosts !== undefined) {
    if (!isObject(json.hosts)) throw new InputError(`${source}: "hosts" must be an object of hostname → { "providers.v1": URL }`);
    for (const [name, services] of Object.entries(json.hosts)) {
      const where = `${source}: hosts["${truncate(name)}"]`;
      let hostname: string;
      try {
        hostname = parseHostname(name);
      } catch (error) {
        throw new InputError(`${where}: ${(error as Error).message}`);
      }
      if (!isObject(services))
        throw new InputError(`${where}: expected an object such as { "providers.v1": "https://…/v1/providers/" } or { "archives": "https://…/" }`);
      refuseUnknown(services, SERVICE_FIELDS, where);
      const parsed: HostServices = {};
      for (const service of SERVICE_FIELDS as (keyof HostServices)[]) {
        if (services[service] !== undefined) parsed[service] = serviceUrl(services[service], `${where}["${service}"]`);
      }
      hosts[hostname] = parsed;
    }
  }
  return { rules, modules, hosts };
}

/** The policy as stored and shown: canonical JSON that parsePolicy reads back to the same policy. */
export function formatPolicy(policy: MirrorPolicy): string {
  const providers = policy.rules.map((rule) => ({
    source: `${rule.hostname}/${rule.namespace ?? '*'}/${rule.type ?? '*'}`,
    versions: rule.versions,
    ...(rule.platforms.length ? { platforms: rule.platforms.map(platformName) } : {}),
  }));
  const hosts = Object.keys(policy.hosts).length ? { hosts: policy.hosts } : {};
  const modules = policy.modules.length ? { modules: policy.modules.map(formatModuleRule) } : {};
  return `${JSON.stringify({ providers, ...modules, ...hosts }, null, 2)}\n`;
}

/** What `policy` allows for `address`; null when no rule matches (the provider is outside the policy). */
export function allowanceFor(policy: MirrorPolicy, address: ProviderAddress): ProviderAllowance | null {
  const rules = policy.rules.filter(
    (rule) =>
      rule.hostname === address.hostname &&
      (rule.namespace === null || rule.namespace === address.namespace) &&
      (rule.type === null || rule.type === address.type),
  );
  if (rules.length === 0) return null;
  const allowing = (version: string) => rules.filter((rule) => meetsConstraints(version, rule.constraints));
  return {
    allows: (version) => allowing(version).length > 0,
    platformsFor(version) {
      const matching = allowing(version);
      if (matching.length === 0) return new Set();
      if (matching.some((rule) => rule.platforms.length === 0)) return null;
      return new Set(matching.flatMap((rule) => rule.platforms.map(platformName)));
    },
  };
}

/** The providers.v1 base URL the policy sets for `hostname` (replacing discovery), if any. */
export function providersServiceFor(policy: MirrorPolicy, hostname: string): string | undefined {
  return policy.hosts[hostname]?.['providers.v1'];
}

function parsePattern(raw: string, where: string): Pick<ProviderRule, 'hostname' | 'namespace' | 'type'> {
  const parts = raw.split('/');
  if (parts.length !== 2 && parts.length !== 3) {
    throw new InputError(`${where}: "${truncate(raw)}" must be HOST/NAMESPACE/TYPE or NAMESPACE/TYPE (use * for a whole namespace or type)`);
  }
  const [host, namespace, type] = parts.length === 3 ? parts : [DEFAULT_UPSTREAM, ...parts];
  if (host!.includes('*')) throw new InputError(`${where}: "${truncate(raw)}": the hostname cannot be a pattern; name the upstream registry`);
  const name = (value: string, what: 'namespace' | 'type') => {
    if (value === '*') return null;
    if (value.includes('*')) throw new InputError(`${where}: "${truncate(raw)}": * stands for a whole ${what}, not part of one`);
    try {
      return parseProviderName(value, what);
    } catch (error) {
      throw new InputError(`${where}: ${(error as Error).message}`);
    }
  };
  try {
    return { hostname: parseHostname(host!), namespace: name(namespace!, 'namespace'), type: name(type!, 'type') };
  } catch (error) {
    if (error instanceof InputError && error.message.startsWith(where)) throw error;
    throw new InputError(`${where}: ${(error as Error).message}`);
  }
}

function serviceUrl(value: unknown, where: string): string {
  if (typeof value !== 'string') throw new InputError(`${where}: expected an absolute URL string`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InputError(`${where}: ${JSON.stringify(truncate(value))} is not an absolute URL`);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new InputError(`${where}: ${url.protocol}//${url.host} is not https (plain http only for a loopback test upstream)`);
  }
  if (url.username || url.password) throw new InputError(`${where}: credentials in the URL are not allowed`);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url.toString();
}

/**
 * A `platforms` field (mirror.json and the policy alike): OS_ARCH names; []
 * when absent (every platform upstream offers). Throws InputError naming
 * `where` for a value that is not an array of strings or an unknown platform.
 */
export function platformList(value: unknown, where: string): Platform[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw new InputError(`${where}: expected an array of "OS_ARCH" strings`);
  try {
    return (value as string[]).map(parsePlatformName);
  } catch (error) {
    throw new InputError(`${where}: ${(error as Error).message}`);
  }
}
