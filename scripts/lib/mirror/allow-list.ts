import { readFileSync } from 'node:fs';
import { InputError, parseConstraints, parseSourceAddress } from '../../../src/protocol/index';
import type { SyncRequest } from './sync';
import { DEFAULT_UPSTREAM, parsePolicy, platformList } from '../../../src/protocol/mirror-policy';

/**
 * mirror.json, the allow-list `mirror sync --config` reads:
 *
 *   {
 *     "platforms": ["linux_amd64", "darwin_arm64"],          // default for every entry (optional)
 *     "providers": [
 *       { "source": "hashicorp/random", "versions": "~> 3.5" },
 *       { "source": "registry.terraform.io/hashicorp/aws", "versions": ">= 5.40, < 6.0.0", "platforms": ["linux_amd64"] }
 *     ]
 *   }
 *
 * `source` is a Terraform source address (a bare NS/TYPE means
 * registry.terraform.io/NS/TYPE); `versions` a Terraform version constraint
 * (required: an allow-list names what it allows); `platforms` OS_ARCH names
 * (the entry's own, else the file's, else every platform upstream offers).
 */

/** Parses mirror.json text; throws InputError naming `source` and the entry and field that is wrong. */
export function parseAllowList(text: string, source: string): SyncRequest[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InputError(`${source}: not JSON (${(error as Error).message})`);
  }
  const top = json as { platforms?: unknown; providers?: unknown };
  if (!top || typeof top !== 'object' || Array.isArray(top)) throw new InputError(`${source}: expected an object with a "providers" array`);
  for (const key of Object.keys(top)) {
    if (key !== 'platforms' && key !== 'providers' && key !== '$comment')
      throw new InputError(`${source}: unknown field "${key}" (allowed: providers, platforms)`);
  }
  const defaults = platformList(top.platforms, `${source}: platforms`);
  if (!Array.isArray(top.providers) || top.providers.length === 0) throw new InputError(`${source}: "providers" must be a non-empty array`);
  return top.providers.map((raw, index) => {
    const where = `${source}: providers[${index}]`;
    const entry = raw as { source?: unknown; versions?: unknown; platforms?: unknown };
    if (!entry || typeof entry !== 'object') throw new InputError(`${where}: expected an object`);
    for (const key of Object.keys(entry)) {
      if (!['source', 'versions', 'platforms', '$comment'].includes(key))
        throw new InputError(`${where}: unknown field "${key}" (allowed: source, versions, platforms)`);
    }
    if (typeof entry.source !== 'string') throw new InputError(`${where}: "source" (e.g. "hashicorp/random") is required`);
    if (typeof entry.versions !== 'string') throw new InputError(`${where}: "versions" (a constraint such as "~> 3.5") is required`);
    try {
      parseConstraints(entry.versions);
      return {
        address: parseSourceAddress(entry.source, DEFAULT_UPSTREAM),
        constraints: entry.versions,
        platforms: entry.platforms === undefined ? defaults : platformList(entry.platforms, `${where}.platforms`),
      };
    } catch (error) {
      throw new InputError(`${where}: ${(error as Error).message}`);
    }
  });
}

/** What `sync --config` takes from a file: the providers, `hosts` overrides (a policy file's), and the pattern entries it skipped. */
export interface SyncConfig {
  requests: SyncRequest[];
  /** providers.v1 base URL by hostname, replacing discovery (a pull-through policy's `hosts`). */
  providersService: Record<string, string>;
  /** One line per `*` entry: pull-through only, sync needs full addresses. */
  skipped: string[];
}

/**
 * Reads the allow-list, or a pull-through policy file (the same format plus
 * `*` patterns and `hosts`, src/protocol/mirror-policy.ts): a policy's exact entries are
 * synced, its pattern entries skipped (named in `skipped`), its `hosts` used
 * instead of discovery. Throws InputError as parseAllowList / parsePolicy do,
 * and when a policy has no exact entry at all.
 */
export function readSyncConfig(path: string): SyncConfig {
  const text = readText(path);
  let top: unknown;
  try {
    top = JSON.parse(text);
  } catch {
    return { requests: parseAllowList(text, path), providersService: {}, skipped: [] };
  }
  const providers = (top as { providers?: unknown })?.providers;
  const isPolicy =
    typeof top === 'object' &&
    top !== null &&
    ('hosts' in top ||
      (Array.isArray(providers) &&
        providers.some((p) => typeof (p as { source?: unknown })?.source === 'string' && (p as { source: string }).source.includes('*'))));
  if (!isPolicy) return { requests: parseAllowList(text, path), providersService: {}, skipped: [] };
  const policy = parsePolicy(text, path);
  const skipped: string[] = [];
  const requests: SyncRequest[] = [];
  policy.rules.forEach((rule, index) => {
    if (rule.namespace === null || rule.type === null) {
      skipped.push(
        `${path}: providers[${index}] (${rule.hostname}/${rule.namespace ?? '*'}/${rule.type ?? '*'}) is a pattern: pull-through only, sync needs a full address — skipped`,
      );
      return;
    }
    requests.push({ address: { hostname: rule.hostname, namespace: rule.namespace, type: rule.type }, constraints: rule.versions, platforms: rule.platforms });
  });
  if (requests.length === 0) throw new InputError(`${path}: every entry is a pattern (*); sync needs at least one full provider address`);
  const providersService = Object.fromEntries(
    Object.entries(policy.hosts).flatMap(([host, services]) => (services['providers.v1'] ? [[host, services['providers.v1']]] : [])),
  );
  return { requests, providersService, skipped };
}

/** Reads and parses an allow-list file. */
export function readAllowList(path: string): SyncRequest[] {
  return parseAllowList(readText(path), path);
}

function readText(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InputError(`${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  return text;
}
