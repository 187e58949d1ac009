/**
 * Which failures of the local state (scripts/lib/stores/local.ts) go away on
 * a retry, decided by type, never by the wording of a message.
 *
 * Several processes may use the local state at once (concurrent publishes, a
 * `wrangler dev` on the same state). Its SQLite then sometimes answers
 * SQLITE_BUSY inside workerd, where the KV and R2 bindings run. workerd turns
 * that C++ exception into a JavaScript Error whose whole message is
 * "internal error; reference = ID" (the SQLite text goes only to workerd's
 * stderr): no code, no name, no `retryable` flag to go by. So the type is
 * given where the failure enters our code: the local runtime's Worker
 * (local-runtime.ts) catches every error of a binding and answers 500, and
 * the CLI's side turns that answer into a LocalRuntimeError carrying the
 * status. A 5xx is a failure of the runtime (busy, a lost connection inside
 * it) and every operation made through it is idempotent, so it is retried;
 * anything else it answers (404: an operation it does not know) is final.
 */

/** The local runtime answered an operation with a status other than 200. */
export class LocalRuntimeError extends Error {
  /** The runtime Worker's HTTP status: 500 for any error its binding threw, 404 for an unknown operation. */
  readonly status: number;
  constructor(operation: string, key: string, status: number, runtimeMessage: string) {
    super(`local ${operation} of ${key} failed: ${status} ${runtimeMessage}`);
    this.name = 'LocalRuntimeError';
    this.status = status;
  }
}

/**
 * Node's codes for a connection to the local runtime that failed or broke
 * (Miniflare's dispatchFetch is undici's fetch: its TypeError "fetch failed"
 * carries the code as `cause`; "other side closed" is UND_ERR_SOCKET, "socket
 * hang up" ECONNRESET).
 */
const CONNECTION_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * True for a failure a retry may cure: a LocalRuntimeError with a 5xx status,
 * a connection to the runtime that failed (a code of CONNECTION_CODES on the
 * error or its cause), or Node's AssertionError (Miniflare's worker-thread
 * channel out of step while the runtime starts). False for everything else:
 * a refusal of the store's own code, a 4xx, a bug.
 */
export function isTransientLocalError(error: unknown): boolean {
  if (error instanceof LocalRuntimeError) return error.status >= 500;
  if (!(error instanceof Error)) return false;
  if (error.name === 'AssertionError') return true;
  return hasConnectionCode(error) || (error.cause instanceof Error && hasConnectionCode(error.cause));
}

function hasConnectionCode(error: Error): boolean {
  const code = (error as Error & { code?: unknown }).code;
  return typeof code === 'string' && CONNECTION_CODES.has(code);
}
