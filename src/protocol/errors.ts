/**
 * An error caused by input the caller can fix: a malformed name, version,
 * platform, file or key. The Worker maps it to a 4xx status, the scripts to a
 * non-zero exit with the message; neither treats it as an internal failure.
 */
export class InputError extends Error {
  /** HTTP status the Worker answers with (400 unless a route says otherwise). */
  readonly status: number;
  constructor(message: string, status = 400) {
    super(message);
    this.name = 'InputError';
    this.status = status;
  }
}
