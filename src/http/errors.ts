import { ConfigError, InputError, UpstreamError } from '../protocol/errors';

// ConfigError is the protocol layer's (src/protocol/errors.ts), so the store can throw it too (a missing SIGNING_KEY_SECRET).
export { ConfigError };
import {
  KeyTooLongError,
  LeaseBusyError,
  NotStoredError,
  ProvenanceRequiredError,
  SecretMismatchError,
  StoreRefusal,
  VersionConflictError,
} from '../store/errors';
import { errorResponse } from './responses';

/**
 * The one place where an error a handler throws becomes an HTTP status
 * (the CLI's counterpart is scripts/lib/cli.ts describeFailure):
 *
 *   InputError (bad input)                → its status (400 unless a route chose 404, 413, …)
 *   UpstreamError (an upstream failed)    → its status (502 unless a route chose 404, 422, 504)
 *   NotStoredError                        → 404
 *   KeyTooLongError (KV's 512-byte keys)  → 404 for a read (no such name can exist), 400 for a write
 *   VersionConflictError, LeaseBusyError  → 409
 *   ProvenanceRequiredError               → 403
 *   ConfigError, SecretMismatchError      → null here: errorToResponse answers 503 naming the setting
 *   any other error (StoreFailure included: StoredReleaseMismatchError,
 *   ListRebuildRaceError, LeaseLostError, DamagedRecordError, SealError)
 *                                         → null: a 500 without internals
 */
export function refusalStatus(error: unknown): number | null {
  if (error instanceof InputError || error instanceof UpstreamError) return error.status;
  if (error instanceof NotStoredError) return 404;
  if (error instanceof KeyTooLongError) return error.access === 'read' ? 404 : 400;
  if (error instanceof VersionConflictError || error instanceof LeaseBusyError) return 409;
  if (error instanceof ProvenanceRequiredError) return 403;
  // A refusal added to src/store/errors.ts without a status here is still the caller's to fix.
  if (error instanceof StoreRefusal) return 409;
  return null;
}

/**
 * Maps an error thrown by a handler to a response: a refusal → its 4xx and message; a ConfigError or a
 * SecretMismatchError (SIGNING_KEY_SECRET does not open a held key) → 503 "the registry is misconfigured: …"
 * naming the setting and the fix (logged); anything else → 500 without internals (logged).
 */
export function errorToResponse(error: unknown): Response {
  const status = refusalStatus(error);
  if (status !== null) return errorResponse(status, (error as Error).message);
  if (error instanceof ConfigError || error instanceof SecretMismatchError) {
    console.error(`misconfigured: ${error.message}`);
    return errorResponse(503, `the registry is misconfigured: ${error.message}`);
  }
  console.error('internal error', error);
  return errorResponse(500, 'internal error');
}
