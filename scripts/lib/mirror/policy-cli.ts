import { readFileSync } from 'node:fs';
import { InputError } from '../../../src/protocol/index';
import { formatPolicy, parsePolicy } from '../../../src/protocol/mirror-policy';
import { clearPolicy, readPolicy, writePolicy } from '../../../src/store/mirror/policy';
import { moduleRuleOverlaps } from '../../../src/store/mirror/module-overlap';
import type { StoreHandle } from '../stores/handle';
import { UsageError } from '../cli';

/**
 * `npm run mirror -- policy set FILE | show | clear`: the pull-through policy
 * the Worker enforces (src/protocol/mirror-policy.ts). `set` validates the whole file
 * and refuses (InputError) a module rule that would proxy into a namespace of
 * `hostname` we publish into (src/store/mirror/module-overlap.ts), before
 * writing anything; `show` prints the stored policy (canonical JSON) or says
 * there is none.
 */
export async function policyCommand(
  args: readonly string[],
  store: StoreHandle,
  out: { say(line: string): void; print(text: string): void },
  hostname: string,
): Promise<void> {
  const [action, ...rest] = args;
  if (action === 'set') {
    if (rest.length !== 1) throw new UsageError('policy set takes one file: npm run mirror -- policy set mirror.json');
    const policy = parsePolicy(readText(rest[0]!), rest[0]!);
    const overlaps = await moduleRuleOverlaps(store, hostname, policy, await readPolicy(store.kv));
    if (overlaps.length) {
      throw new InputError(
        `${rest[0]}: nothing stored — ${overlaps.map((o) => `the module rule ${o.source} would proxy into ${hostname}/${o.namespace}, where ${o.what}`).join('; ')}. An upstream author could then add a higher version of a module of yours there; give the rule a namespace of its own with "as" (e.g. "as": "${overlaps[0]!.namespace}-upstream")`,
      );
    }
    await writePolicy(store.kv, policy);
    out.say(
      `stored the pull-through policy in ${store.description}: ${policy.rules.length} provider rule${policy.rules.length === 1 ? '' : 's'}${policy.modules.length ? `, ${policy.modules.length} module rule${policy.modules.length === 1 ? '' : 's'}` : ''}${Object.keys(policy.hosts).length ? `, hosts ${Object.keys(policy.hosts).join(', ')}` : ''} (Cloudflare: applies everywhere within 60 s)`,
    );
    return;
  }
  if (action === 'show') {
    if (rest.length) throw new UsageError('policy show takes no arguments');
    const policy = await readPolicy(store.kv);
    if (policy === null) out.say(`no pull-through policy in ${store.description}: the mirror serves only what it holds`);
    else out.print(formatPolicy(policy));
    return;
  }
  if (action === 'clear') {
    if (rest.length) throw new UsageError('policy clear takes no arguments');
    await clearPolicy(store.kv);
    out.say(`removed the pull-through policy from ${store.description}: what is held stays served, nothing new is fetched`);
    return;
  }
  throw new UsageError(action ? `unknown policy action "${action}" (set FILE, show, clear)` : 'policy needs an action: set FILE, show or clear');
}

/** Reads and parses the policy file; throws InputError (from parsePolicy, or when it cannot be read) and writes nothing. */
export function validatePolicyFile(path: string): void {
  parsePolicy(readText(path), path);
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new InputError(`${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}
