/**
 * An error caused by input the caller can fix: a malformed name, version,
 * platform, file or key. The Worker maps it to a 4xx status
 * (src/http/errors.ts), the scripts to exit 1 (scripts/lib/cli.ts); neither
 * treats it as an internal failure. Outcomes of the stored state (a version
 * published with other bytes, nothing stored, a busy lease) are not
 * InputErrors: the store throws the typed outcomes of src/store/errors.ts.
 */
export class InputError extends Error {
  /** HTTP status the Worker answers with: 400 unless route or page code (never the store) chose another 4xx. */
  readonly status: number;
  constructor(message: string, status = 400) {
    super(message);
    this.name = 'InputError';
    this.status = status;
  }
}

/**
 * An upstream (a registry, a mirror, a module source) failed or answered with
 * something unusable: the message names the URL and what went wrong. Not an
 * InputError — the caller's own input was fine — but the Worker answers with
 * `status` (502 unless a route chose 404, 422 or 504; src/http/errors.ts) and
 * the scripts exit 1 (scripts/lib/cli.ts), as the fix lies upstream or in the
 * configuration. `httpStatus` is the upstream's own HTTP status when that is
 * what failed, so callers decide on it, never on the message's wording.
 */
export class UpstreamError extends Error {
  readonly status: number;
  readonly httpStatus: number | undefined;
  constructor(message: string, status = 502, httpStatus?: number) {
    super(message);
    this.name = 'UpstreamError';
    this.status = status;
    this.httpStatus = httpStatus;
  }
}

/**
 * A JSON value that does not have the shape a protocol defines (a response
 * from a registry or mirror, a stored document). Says where and what was
 * expected: `versions[2].version: expected a string, got 12`.
 */
export class WireShapeError extends Error {
  constructor(
    readonly where: string,
    expected: string,
    got: unknown,
  ) {
    super(`${where}: expected ${expected}, got ${describe(got)}`);
    this.name = 'WireShapeError';
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/**
 * The error body of every registry API (Terraform's registry client reads
 * `errors`): {"errors": ["…"]}.
 */
export interface ErrorResponse {
  errors: string[];
}

/** The serialised error body for one message. */
export function errorBody(message: string): string {
  return JSON.stringify({ errors: [message] } satisfies ErrorResponse);
}

/**
 * A setting the registry cannot run with (REGISTRY_HOSTNAME not a hostname, a
 * secret too short or missing where it is needed, a sign-in configuration
 * that does not parse; src/config.ts; SIGNING_KEY_SECRET missing where a
 * registry-held key is used, src/store/keys/seal.ts): the message names the
 * setting and the fix, never its value. The Worker answers 503 with it on the routes that
 * need the setting (errorToResponse) and logs it; `npm start` and `npm run
 * deploy` refuse to start with it.
 */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
