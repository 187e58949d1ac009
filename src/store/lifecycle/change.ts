import { InputError } from '../../protocol/errors';
import type { BlobStore } from '../store';
import { parseLifecycle, serializeLifecycle, EMPTY_LIFECYCLE, type LifecycleState } from './state';
import { ListRebuildRaceError, NotStoredError } from '../errors';

/**
 * One lifecycle change applied to the stored state: the pure part
 * (applyLifecycleAction) and the commit (commitLifecycle: an R2 write
 * conditional on the object read, retried on a lost race). Callers hold the
 * provider's or module's lease and rebuild the lists afterwards
 * (src/store/lifecycle/providers.ts, modules.ts).
 */

export type LifecycleAction =
  | { kind: 'deprecate'; version?: string; message: string }
  | { kind: 'undeprecate'; version?: string }
  | { kind: 'withdraw'; version: string; message: string }
  | { kind: 'restore'; version: string };

export const MAX_MESSAGE_LENGTH = 1000;

/**
 * A maintainer's message, trimmed. Throws InputError when it is empty, over
 * 1000 characters or holds a control character (Terraform prints it on one
 * line). HTML is allowed: pages escape it, clients print it as text.
 */
export function parseLifecycleMessage(raw: string | undefined, what: string): string {
  const message = (raw ?? '').trim();
  if (!message) throw new InputError(`${what} needs --message "why, and what to use instead" (users see it in terraform init and on the pages)`);
  if (message.length > MAX_MESSAGE_LENGTH) throw new InputError(`--message is ${message.length} characters; keep it under ${MAX_MESSAGE_LENGTH}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(message))
    throw new InputError('--message must be one line without control characters (terraform init prints it as one warning)');
  return message;
}

/**
 * `state` with `action` applied at `now`, and whether anything changed (the
 * same deprecation again, undeprecating what is not deprecated, withdrawing a
 * withdrawn version are no-ops). Version existence is the caller's check.
 */
export function applyLifecycleAction(state: LifecycleState, action: LifecycleAction, now: Date): { state: LifecycleState; changed: boolean } {
  const at = now.toISOString();
  const versions = { ...state.versions };
  const next: LifecycleState = { ...(state.deprecated ? { deprecated: state.deprecated } : {}), versions };
  const entryOf = (version: string) => ({ ...(versions[version] ?? {}) });
  const put = (version: string, entry: { deprecated?: LifecycleState['deprecated']; withdrawn?: LifecycleState['deprecated'] }) => {
    if (entry.deprecated || entry.withdrawn) versions[version] = entry;
    else delete versions[version];
  };
  switch (action.kind) {
    case 'deprecate':
      if (action.version === undefined) {
        if (state.deprecated?.message === action.message) return { state, changed: false };
        next.deprecated = { message: action.message, at };
      } else {
        const entry = entryOf(action.version);
        if (entry.deprecated?.message === action.message) return { state, changed: false };
        put(action.version, { ...entry, deprecated: { message: action.message, at } });
      }
      break;
    case 'undeprecate':
      if (action.version === undefined) {
        if (!state.deprecated) return { state, changed: false };
        delete next.deprecated;
      } else {
        const entry = entryOf(action.version);
        if (!entry.deprecated) return { state, changed: false };
        delete entry.deprecated;
        put(action.version, entry);
      }
      break;
    case 'withdraw': {
      const entry = entryOf(action.version);
      if (entry.withdrawn) return { state, changed: false };
      put(action.version, { ...entry, withdrawn: { message: action.message, at } });
      break;
    }
    case 'restore': {
      const entry = entryOf(action.version);
      if (!entry.withdrawn) return { state, changed: false };
      delete entry.withdrawn;
      put(action.version, entry);
      break;
    }
  }
  return { state: next, changed: true };
}

/** The stored state under `key` (EMPTY when none) and the etag of what was read. Throws DamagedRecordError for a damaged object. */
export async function readLifecycleObject(blobs: BlobStore, key: string): Promise<{ state: LifecycleState; etag: string | null }> {
  const object = await blobs.get(key);
  if (!object) return { state: EMPTY_LIFECYCLE, etag: null };
  return { state: parseLifecycle(await object.text(), key), etag: object.etag };
}

/** The stored state under `key`, EMPTY when none. Throws DamagedRecordError for a damaged object. */
export async function readLifecycle(blobs: BlobStore, key: string): Promise<LifecycleState> {
  return (await readLifecycleObject(blobs, key)).state;
}

/**
 * Applies `action` to the state under `key` and writes it only if the object
 * is still the one read (If-Match, or If-None-Match: * when there was none):
 * the commit point. A lost race (a writer without the lease) is retried
 * with the state read again; after 5 lost races throws ListRebuildRaceError.
 * `check` runs before the write (the lease).
 */
export async function commitLifecycle(
  blobs: BlobStore,
  key: string,
  action: LifecycleAction,
  check: () => void,
  now = new Date(),
): Promise<{ state: LifecycleState; changed: boolean }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { state, etag } = await readLifecycleObject(blobs, key);
    const result = applyLifecycleAction(state, action, now);
    if (!result.changed) return result;
    check();
    const written = await blobs.put(key, serializeLifecycle(result.state), {
      httpMetadata: { contentType: 'application/json' },
      onlyIf: etag ? { etagMatches: etag } : { etagDoesNotMatch: '*' },
    });
    if (written) return result;
  }
  throw new ListRebuildRaceError(`${key} kept changing while being written (writers without the lease); run the command again`);
}

/** What a lifecycle refusal names: `what` the package is (e.g. "provider registry.example.com/acme/thing") and `form`, its address form (e.g. "NAMESPACE/TYPE"). */
export interface LifecycleSubject {
  what: string;
  form: string;
}

/**
 * The one existence check of a lifecycle change (and of `npm run lifecycle -- status`): throws NotStoredError
 * when the package has no published `versions`, or `version` is given and is not among them (listing them).
 * Pure: callers make it on versions read before the lease (so an unknown target is refused having written
 * nothing: no lease, no audit entry; src/store/lifecycle/providers.ts, modules.ts) and changeLifecycle makes it
 * again on versions read under the lease.
 */
export function checkLifecycleTarget(versions: readonly string[], version: string | undefined, about: LifecycleSubject): void {
  if (versions.length === 0) throw new NotStoredError(`${about.what} has no published version; check the address (${about.form} of this registry)`);
  if (version !== undefined && !versions.includes(version)) {
    throw new NotStoredError(`${about.what} has no version ${version}; published: ${versions.join(', ')}`);
  }
}

/**
 * A lifecycle change of one provider or module, the same for both, under its lease: refuses with
 * NotStoredError when `versions` (read under the lease) lack the target (checkLifecycleTarget); else commits
 * the action under `key` (commitLifecycle) and rebuilds its lists with `rebuild`. Idempotent.
 */
export async function changeLifecycle(
  blobs: BlobStore,
  key: string,
  versions: string[],
  action: LifecycleAction,
  about: LifecycleSubject,
  rebuild: (check: () => void) => Promise<unknown>,
  options: { lease?: { check(): void }; now?: Date },
): Promise<{ changed: boolean; state: LifecycleState; versions: string[] }> {
  const check = () => options.lease?.check();
  checkLifecycleTarget(versions, action.version, about);
  const result = await commitLifecycle(blobs, key, action, check, options.now);
  await rebuild(check);
  return { ...result, versions };
}
