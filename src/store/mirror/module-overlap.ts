import { formatModuleAddress, type ModuleAddress } from '../../protocol/modules-v1';
import type { MirrorPolicy } from '../../protocol/mirror-policy';
import type { ModuleRule } from '../../protocol/module-policy';
import { readPublishers } from '../publishers/read';
import {
  committedRecordPrefix,
  moduleCommittedRecordsOfHostPrefix,
  moduleRecordsOfHostPrefix,
  parseModuleCommittedRecordKey,
  parseModuleRecordKey,
  versionRecordPrefix,
} from '../layout';
import { listAllKeys, listAllObjectKeys } from '../list';
import { readModuleRecord } from '../modules/record';
import type { Store } from '../store';

/**
 * Whether a module proxy rule would mix an upstream's modules into a
 * namespace this registry publishes into: there, an upstream author could
 * add a higher version of an internal module (or its first version, under a
 * name you were about to publish), and Terraform would pick it. A namespace
 * of REGISTRY_HOSTNAME is one we publish into when it holds
 *   - a module the rule would serve (its name and system match) with a
 *     version not stored by the proxy (ModuleVersionRecord.proxiedFrom; a
 *     version stored by a proxy before that field existed counts as the
 *     proxy's when the stored policy already proxies it from the same
 *     upstream namespace),
 *   - a provider of ours, or
 *   - a trusted publisher (its CI jobs publish into it).
 * Publish tokens are not looked at (their scopes name namespaces too; a
 * token for a namespace with none of the above has published nothing yet).
 */

/** One overlap: our namespace, the rule's source, and what we publish there. */
export interface ModuleRuleOverlap {
  namespace: string;
  source: string;
  what: string;
}

const matches = (rule: ModuleRule, address: ModuleAddress) =>
  (rule.name === null || rule.name === address.name) && (rule.system === null || rule.system === address.system);
const sourceOf = (rule: ModuleRule) => `${rule.hostname}/${rule.namespace}/${rule.name ?? '*'}/${rule.system ?? '*'}`;

/**
 * The overlaps of `policy`'s module rules with namespaces of `hostname` we
 * publish into (see the file comment), at most one per rule; `stored` is
 * the policy stored now (its rules tell a proxied version from before
 * `proxiedFrom` apart). Rules whose upstream is `hostname` itself are
 * skipped (the proxy ignores them). Reads: per rule's namespace, one R2
 * list of its module records (and one KV list of the older KV records), one
 * record read per matching version, one R2 and one KV list for providers,
 * one KV read for publishers. Throws only what the store throws.
 */
export async function moduleRuleOverlaps(store: Store, hostname: string, policy: MirrorPolicy, stored: MirrorPolicy | null): Promise<ModuleRuleOverlap[]> {
  const overlaps: ModuleRuleOverlap[] = [];
  for (const rule of policy.modules) {
    if (rule.hostname === hostname) continue;
    const namespace = rule.as;
    const found = await publishedIn(store, hostname, namespace, rule, stored);
    if (found) overlaps.push({ namespace, source: sourceOf(rule), what: found });
  }
  return overlaps;
}

async function publishedIn(store: Store, hostname: string, namespace: string, rule: ModuleRule, stored: MirrorPolicy | null): Promise<string | null> {
  const versions = new Map<string, { address: ModuleAddress; version: string }>();
  for (const key of await listAllObjectKeys(store.blobs, `${moduleCommittedRecordsOfHostPrefix(hostname)}${namespace}/`)) {
    const parsed = parseModuleCommittedRecordKey(key);
    if (parsed && parsed.address.namespace === namespace) versions.set(`${formatModuleAddress(parsed.address)} ${parsed.version}`, parsed);
  }
  for (const key of await listAllKeys(store.kv, `${moduleRecordsOfHostPrefix(hostname)}${namespace}/`)) {
    const parsed = parseModuleRecordKey(key);
    if (parsed) versions.set(`${formatModuleAddress(parsed.address)} ${parsed.version}`, parsed);
  }
  for (const { address, version } of versions.values()) {
    if (!matches(rule, address)) continue;
    const record = await readModuleRecord(store, address, version);
    if (record === null || record.proxiedFrom !== undefined) continue;
    const proxiedBefore = stored?.modules.some(
      (r) => r.as === namespace && r.hostname === rule.hostname && r.namespace === rule.namespace && matches(r, address),
    );
    if (!proxiedBefore) return `module ${formatModuleAddress(address)} ${version} is published here`;
  }
  const providerRecords = [
    ...(await store.blobs.list({ prefix: committedRecordPrefix({ hostname, namespace, type: '' }).replace(/\/\/$/, '/'), limit: 1 })).objects.map((o) => o.key),
    ...(await store.kv.list({ prefix: versionRecordPrefix({ hostname, namespace, type: '' }).replace(/\/\/$/, '/'), limit: 1 })).keys.map((k) => k.name),
  ];
  if (providerRecords.length) return `providers are published in ${hostname}/${namespace}`;
  if ((await readPublishers(store, hostname, namespace)).length) return `${hostname}/${namespace} has trusted publishers (CI jobs publish into it)`;
  return null;
}
