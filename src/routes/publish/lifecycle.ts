import type { IRequest } from 'itty-router';
import { settings } from '../../config';
import type { Env } from '../../env';
import { pathSegment } from '../../http/responses';
import { formatAddress, providerAddress } from '../../protocol/address';
import { InputError } from '../../protocol/errors';
import { formatModuleAddress, moduleAddress } from '../../protocol/modules-v1';
import { parseVersion } from '../../protocol/version';
import { moduleLeaseName, providerLeaseName } from '../../store/layout';
import { parseLifecycleMessage, type LifecycleAction } from '../../store/lifecycle/change';
import { changeModuleLifecycle, knownModuleVersions } from '../../store/lifecycle/modules';
import { changeProviderLifecycle, knownProviderVersions } from '../../store/lifecycle/providers';
import { NotStoredError } from '../../store/errors';
import { errorResponse } from '../../http/responses';
import type { PackageRef } from '../../access/scope';
import { audit, json, readJsonBody, type Publisher, type PublishStore, type PublishTarget } from './context';
import type { Actor } from '../../store/audit/actor';
import { withWorkerLease } from './lease';

/**
 * `POST /v1/publish/lifecycle/providers/:namespace/:type` and
 * `POST /v1/publish/lifecycle/modules/:namespace/:name/:system` — the
 * lifecycle commands over the publish API, with the same credentials as a
 * publish of that namespace (a publish token or a trusted publisher's CI
 * token; src/routes/publish/context.ts). Body:
 * `{"action": "deprecate"|"undeprecate"|"withdraw"|"restore", "version"?: "X.Y.Z", "message"?: "…"}`.
 * The same store code as `npm run lifecycle` (the lease, the conditional R2
 * commit, the rebuild). 200 `{"status": "changed"|"unchanged", "versions", "lifecycle"}`;
 * 400 for a bad body, 413 for one over 8 KiB (read only once the credential
 * is accepted, and never past the limit), 404 for an unknown package or
 * version (checked before the lease is taken: nothing written, not even an
 * audit entry), 401/403 for credentials; every other outcome audited
 * (`lifecycle.ACTION`, the actor; a refused credential as `lifecycle.change`).
 */

const ACTIONS = ['deprecate', 'undeprecate', 'withdraw', 'restore'] as const;
/** The largest body accepted: an action, a version and a message of at most MAX_MESSAGE_LENGTH characters. */
const MAX_BODY_BYTES = 8 * 1024;

/**
 * A lifecycle change's target: the package in the path, audited as `lifecycle.change` of it until the body
 * (read only once the credential is accepted) names the action and version (`name` is the package's address).
 * `known` is the existence check made before the lease (reads only; NotStoredError), `change` the change under
 * the lease (which checks again).
 */
export interface LifecycleTarget extends PublishTarget {
  name: string;
  known: (store: PublishStore, action: LifecycleAction) => Promise<unknown>;
  change: Change;
}

/** The guard's resolver (asPublisherOf) for `/v1/publish/lifecycle/providers/:namespace/:type`. */
export function providerPackage(request: IRequest, env: Env): LifecycleTarget {
  const address = providerAddress(settings(env).hostname, pathSegment(request.params.namespace, 'namespace'), pathSegment(request.params.type, 'type'));
  return lifecycleTarget(
    { kind: 'provider', namespace: address.namespace, type: address.type },
    formatAddress(address),
    (store, action) => knownProviderVersions(store, address, action.version),
    (store, action, check) =>
      withWorkerLease(store.blobs, providerLeaseName(address), check.actor, `lifecycle ${action.kind} ${formatAddress(address)}`, (lease) =>
        changeProviderLifecycle(store, address, action, { lease }),
      ),
  );
}

/** The guard's resolver (asPublisherOf) for `/v1/publish/lifecycle/modules/:namespace/:name/:system`. */
export function modulePackage(request: IRequest, env: Env): LifecycleTarget {
  const address = moduleAddress(
    settings(env).hostname,
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.name, 'name'),
    pathSegment(request.params.system, 'system'),
  );
  return lifecycleTarget(
    { kind: 'module', ...address },
    formatModuleAddress(address),
    (store, action) => knownModuleVersions(store, address, action.version),
    (store, action, check) =>
      withWorkerLease(store.blobs, moduleLeaseName(address), check.actor, `lifecycle ${action.kind} ${formatModuleAddress(address)}`, (lease) =>
        changeModuleLifecycle(store, address, action, { lease }),
      ),
  );
}

type Change = (store: PublishStore, action: LifecycleAction, context: { actor: Actor }) => Promise<{ changed: boolean; versions: string[]; state: unknown }>;

function lifecycleTarget(pkg: PackageRef, name: string, known: LifecycleTarget['known'], change: Change): LifecycleTarget {
  // Nothing of the body is read before the credential is checked: a refused credential is audited as
  // `lifecycle.change` of the package; once the body is parsed, `what` names the action and version, also for
  // the refusals asPublisher audits after that (it reads `what` when it writes the entry).
  return { pkg, what: { action: 'lifecycle.change', target: name }, name, known, change };
}

/** The handler behind `asPublisherOf(providerPackage)` and `asPublisherOf(modulePackage)`: the caller may change the package. */
export async function changeLifecycle(
  request: IRequest,
  _env: Env,
  ctx: ExecutionContext,
  { actor, store, target }: Publisher<LifecycleTarget>,
): Promise<Response> {
  const { what, name } = target;
  const action = parseAction(await readJsonBody(request, MAX_BODY_BYTES));
  Object.assign(what, { action: `lifecycle.${action.kind}`, target: `${name}${'version' in action && action.version ? ` ${action.version}` : ''}` });
  // Bad input changes nothing: an unknown package or version is answered 404 here, before the lease is taken or an
  // audit entry written (a NotStoredError thrown to asPublisher would be audited). (A CI ID token's one use was
  // recorded already, when asPublisher accepted it: src/access/publish-auth.ts.) The change checks again on what it
  // reads under the lease, so its commit never rests on this read (a version it found stays: this registry's
  // published versions are never removed; one published meanwhile was not there when this answered).
  try {
    await target.known(store, action);
  } catch (error) {
    if (error instanceof NotStoredError) return errorResponse(404, error.message);
    throw error;
  }
  const result = await target.change(store, action, { actor });
  await audit(store, ctx, { ...what, actor, outcome: result.changed ? 'ok' : 'unchanged', ...('message' in action ? { reason: action.message } : {}) });
  return json({ address: name, status: result.changed ? 'changed' : 'unchanged', versions: result.versions, lifecycle: result.state });
}

/** The action a request body asks for. Throws InputError (400) naming what is wrong. */
export function parseAction(body: unknown): LifecycleAction {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new InputError('the body must be a JSON object {"action", "version"?, "message"?}');
  const { action, version, message, ...rest } = body as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length) throw new InputError(`unknown field ${JSON.stringify(unknown[0])}; the body has action, version and message`);
  if (typeof action !== 'string' || !(ACTIONS as readonly string[]).includes(action)) throw new InputError(`action must be one of ${ACTIONS.join(', ')}`);
  if (version !== undefined && typeof version !== 'string') throw new InputError('version must be a string');
  if (message !== undefined && typeof message !== 'string') throw new InputError('message must be a string');
  const v = version === undefined ? undefined : parseVersion(version);
  switch (action) {
    case 'deprecate':
      return { kind: 'deprecate', ...(v ? { version: v } : {}), message: parseLifecycleMessage(message, 'deprecate') };
    case 'withdraw':
      if (!v) throw new InputError('withdraw needs a version: a whole package cannot be withdrawn (deprecate it instead)');
      return { kind: 'withdraw', version: v, message: parseLifecycleMessage(message, 'withdraw') };
    case 'undeprecate':
      if (message !== undefined) throw new InputError('undeprecate takes no message');
      return { kind: 'undeprecate', ...(v ? { version: v } : {}) };
    default:
      if (message !== undefined) throw new InputError('restore takes no message');
      if (!v) throw new InputError('restore needs a version');
      return { kind: 'restore', version: v };
  }
}
