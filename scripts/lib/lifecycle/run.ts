import { formatAddress, parseHostname, parseProviderName, providerAddress, type ProviderAddress } from '../../../src/protocol/address';
import { InputError } from '../../../src/protocol/errors';
import { formatModuleAddress, moduleAddress, type ModuleAddress } from '../../../src/protocol/modules-v1';
import { parseVersion } from '../../../src/protocol/version';
import { moduleLeaseName, moduleLifecycleKey, providerLeaseName, providerLifecycleKey } from '../../../src/store/layout';
import { withLease } from '../../../src/store/lease';
import { parseLifecycleMessage, readLifecycle, type LifecycleAction } from '../../../src/store/lifecycle/change';
import { changeModuleLifecycle, knownModuleVersions } from '../../../src/store/lifecycle/modules';
import { changeProviderLifecycle, knownProviderVersions } from '../../../src/store/lifecycle/providers';
import type { LifecycleState } from '../../../src/store/lifecycle/state';
import { readRegistryConfig } from '../config';
import { audited } from '../audit';
import { processLeaseOptions } from '../stores/lease';
import { openStore } from '../stores/open';

/**
 * The function API behind `npm run lifecycle` (scripts/lifecycle.ts):
 * parse and validate everything, open the store (local state or --remote),
 * check the provider or module holds the version, take its lease and apply
 * the change through src/store/lifecycle/. Throws InputError for anything the
 * user can fix and NotStoredError for an unknown provider, module or version,
 * before writing anything (no lease, no audit entry).
 */

export const LIFECYCLE_COMMANDS = ['deprecate', 'undeprecate', 'withdraw', 'restore', 'status'] as const;
export type LifecycleCommand = (typeof LIFECYCLE_COMMANDS)[number];

export interface LifecycleOptions {
  command: LifecycleCommand;
  /** NS/TYPE (a provider of this registry) or NS/NAME/SYSTEM (a module). */
  address: string;
  version?: string;
  message?: string;
  remote?: boolean;
  env?: string;
  configPath?: string;
  persistTo?: string;
  hostname?: string;
  log?: (line: string) => void;
}

export interface LifecycleOutput {
  kind: 'provider' | 'module';
  address: string;
  command: LifecycleCommand;
  version: string | null;
  /** 'changed', 'unchanged' (it already was so), or 'status'. */
  status: 'changed' | 'unchanged' | 'status';
  versions: string[];
  lifecycle: LifecycleState;
}

type Target = { kind: 'provider'; address: ProviderAddress } | { kind: 'module'; address: ModuleAddress };

/** NS/TYPE → provider, NS/NAME/SYSTEM → module, on `hostname`. Throws InputError otherwise. */
export function parseTarget(raw: string, hostname: string): Target {
  const parts = raw.split('/');
  if (parts.length === 2) return { kind: 'provider', address: providerAddress(hostname, parts[0]!, parts[1]!) };
  if (parts.length === 3) return { kind: 'module', address: moduleAddress(hostname, parts[0]!, parts[1]!, parts[2]!) };
  throw new InputError(
    `"${raw}" is neither a provider (NAMESPACE/TYPE, e.g. acme/thing) nor a module (NAMESPACE/NAME/SYSTEM, e.g. acme/vpc/aws) of this registry`,
  );
}

/** The action a command asks for. Throws InputError for a missing or superfluous --version/--message. */
export function actionOf(command: Exclude<LifecycleCommand, 'status'>, version: string | undefined, message: string | undefined): LifecycleAction {
  switch (command) {
    case 'deprecate':
      return { kind: 'deprecate', ...(version ? { version } : {}), message: parseLifecycleMessage(message, 'deprecate') };
    case 'withdraw':
      if (!version) throw new InputError('withdraw needs --version X.Y.Z: a whole provider or module cannot be withdrawn (deprecate it instead)');
      return { kind: 'withdraw', version, message: parseLifecycleMessage(message, 'withdraw') };
    case 'undeprecate':
    case 'restore':
      if (message !== undefined) throw new InputError(`${command} takes no --message`);
      if (command === 'restore') {
        if (!version) throw new InputError('restore needs --version X.Y.Z (the withdrawn version to offer again)');
        return { kind: 'restore', version };
      }
      return { kind: 'undeprecate', ...(version ? { version } : {}) };
  }
}

export async function runLifecycle(options: LifecycleOptions): Promise<LifecycleOutput> {
  const log = options.log ?? (() => {});
  const config = await readRegistryConfig({ configPath: options.configPath, env: options.env, persistTo: options.persistTo });
  const hostname = options.hostname ? parseHostname(options.hostname) : config.hostname;
  const target = parseTarget(options.address, hostname);
  const version = options.version === undefined ? undefined : parseVersion(options.version);
  const action = options.command === 'status' ? null : actionOf(options.command, version, options.message);
  if (target.kind === 'provider') parseProviderName(target.address.namespace, 'namespace');
  const name = target.kind === 'provider' ? formatAddress(target.address) : formatModuleAddress(target.address);

  const store = await openStore(config, { remote: options.remote });
  try {
    // The one existence check (reads only), made before the lease and the audit entry: an unknown provider, module
    // or version is refused having written nothing. The change checks again on what it reads under the lease.
    const known = () =>
      target.kind === 'provider' ? knownProviderVersions(store, target.address, version) : knownModuleVersions(store, target.address, version);
    if (action === null) {
      const [versions, lifecycle] = await Promise.all([
        known(),
        readLifecycle(store.blobs, target.kind === 'provider' ? providerLifecycleKey(target.address) : moduleLifecycleKey(target.address)),
      ]);
      return { kind: target.kind, address: name, command: 'status', version: version ?? null, status: 'status', versions, lifecycle };
    }
    await known();
    const lease = target.kind === 'provider' ? providerLeaseName(target.address) : moduleLeaseName(target.address);
    const purpose = `lifecycle ${options.command} ${name}${version ? ` ${version}` : ''}`;
    const change = () =>
      withLease(store.blobs, lease, processLeaseOptions(purpose, log), (held) => {
        const progress = ({ detail, step }: { step: string; detail: string }) => {
          if (step === 'warning' || step === 'index') log(`  ${step}: ${detail}`);
        };
        return target.kind === 'provider'
          ? changeProviderLifecycle(store, target.address, action, { lease: held, progress })
          : changeModuleLifecycle(store, target.address, action, { lease: held, progress });
      });
    // From here every outcome leaves an audit entry (a change, a lease held too long: refused, a failure): actor operator, local or --remote.
    const record = {
      action: `lifecycle.${options.command}`,
      target: `${name}${version ? ` ${version}` : ''}`,
      ...('message' in action ? { reason: action.message } : {}),
    };
    const result = await audited({ blobs: store.blobs }, options.remote, record, change, (r) => ({ outcome: r.changed ? 'ok' : 'unchanged' }));
    return {
      kind: target.kind,
      address: name,
      command: options.command,
      version: version ?? null,
      status: result.changed ? 'changed' : 'unchanged',
      versions: result.versions,
      lifecycle: result.state,
    };
  } finally {
    await store.close();
  }
}
