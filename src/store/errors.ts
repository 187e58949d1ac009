/**
 * The outcomes the store reports by type. None carries an HTTP status or an
 * exit code: the Worker chooses the status in src/http/errors.ts, the
 * scripts choose the exit code in scripts/lib/cli.ts. Messages name what
 * happened and the fix; where users read them (a refused publish) they are
 * the product.
 *
 * StoreRefusal: the caller can act on it (a conflict with what is stored,
 * nothing stored under the name, a writer holding the lease) — a 4xx in the
 * Worker, exit 1 in the CLI. StoreFailure: the stored state or a race that
 * running the command again resolves (or an operator must look at) — a 500
 * in the Worker, exit 3 in the CLI.
 */

/** A refusal the caller can act on; see the subclasses. */
export abstract class StoreRefusal extends Error {}

/** A failure of the stored state or a race; see the subclasses. */
export abstract class StoreFailure extends Error {}

/**
 * A version (provider, module, mirrored platform, or its docs) is already
 * committed with other contents: published versions are immutable. Also a
 * stored version that changed under a writer without the lease.
 */
export class VersionConflictError extends StoreRefusal {
  constructor(message: string) {
    super(message);
    this.name = 'VersionConflictError';
  }
}

/** Nothing is stored under what was asked for (no such provider, module or version). */
export class NotStoredError extends StoreRefusal {
  constructor(message: string) {
    super(message);
    this.name = 'NotStoredError';
  }
}

/**
 * A name whose Workers KV key would be over KV's 512-byte limit (src/store/key-limits.ts): nothing can ever be
 * stored under it, so a read of it is "not found" (`access` 'read': the Worker answers 404) and a write is bad
 * input (`access` 'write': 400). The message names the key's size, the limit and the fix.
 */
export class KeyTooLongError extends StoreRefusal {
  constructor(
    message: string,
    readonly access: 'read' | 'write',
  ) {
    super(message);
    this.name = 'KeyTooLongError';
  }
}

/** Waited for a lease another live writer kept holding (the message names the owner): try again later. */
export class LeaseBusyError extends StoreRefusal {
  constructor(message: string) {
    super(message);
    this.name = 'LeaseBusyError';
  }
}

/**
 * What R2 holds for a committed version (a release file, a module package)
 * does not match its record, and the bytes to restore it were not supplied.
 */
export class StoredReleaseMismatchError extends StoreFailure {
  constructor(message: string) {
    super(message);
    this.name = 'StoredReleaseMismatchError';
  }
}

/**
 * A list (version lists, catalogue, a lifecycle object) kept changing while
 * it was rebuilt or written: writers without the lease. Running the command
 * again completes it.
 */
export class ListRebuildRaceError extends StoreFailure {
  constructor(message: string) {
    super(message);
    this.name = 'ListRebuildRaceError';
  }
}

/** The lease was lost while held: stop writing; running again is safe. */
export class LeaseLostError extends StoreFailure {
  constructor(name: string, why: string) {
    super(`lost the lease ${name} (${why}); stopped before writing more — run the command again`);
    this.name = 'LeaseLostError';
  }
}

/**
 * A registry-held signing key cannot be sealed or opened: SIGNING_KEY_SECRET
 * is missing or too short, or is not the one the key was sealed with. The
 * operator fixes the secret (src/store/keys/seal.ts).
 */
export class SealError extends StoreFailure {
  constructor(message: string) {
    super(message);
    this.name = 'SealError';
  }
}

/**
 * SIGNING_KEY_SECRET does not open a registry-held key (seal.ts `open`): the
 * secret changed, or the sealed object was altered or copied from elsewhere.
 * AES-GCM cannot tell the two apart; the first is far the likelier, so the
 * Worker answers 503 naming the setting (src/http/errors.ts) and the CLI
 * exits 1, where other SealErrors stay internal failures.
 */
export class SecretMismatchError extends SealError {
  constructor(message: string) {
    super(message);
    this.name = 'SecretMismatchError';
  }
}

/** A stored record that fails validation: which key, and why. Readers report it and skip the record. */
export class DamagedRecordError extends StoreFailure {
  constructor(
    readonly key: string,
    why: string,
  ) {
    super(`version record ${key} is damaged (${why}); it was skipped`);
    this.name = 'DamagedRecordError';
  }
}

/**
 * The namespace requires build provenance (`npm run publisher --
 * require-provenance`) and this publish is not from a trusted CI publisher
 * with complete claims (a token, the CLI, or a CI token lacking them).
 */
export class ProvenanceRequiredError extends StoreRefusal {
  constructor(message: string) {
    super(message);
    this.name = 'ProvenanceRequiredError';
  }
}
