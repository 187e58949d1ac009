import { describe, expect, it } from 'vitest';
import { refusalStatus } from '../../src/http/errors';
import { InputError, UpstreamError } from '../../src/protocol/errors';

describe('UpstreamError', () => {
  it("is not an InputError (the caller's input was fine) but answers with its own status, never a 500", () => {
    const error = new UpstreamError('list versions https://up.example/v1/providers/a/b/versions: HTTP 404', 404, 404);
    expect(error).not.toBeInstanceOf(InputError);
    expect(refusalStatus(error)).toBe(404);
    expect(refusalStatus(new UpstreamError('https://up.example/x: timed out after 10 s', 504))).toBe(504);
    expect(refusalStatus(new UpstreamError('https://up.example/x: HTTP 500', undefined, 500))).toBe(502);
  });

  it("carries the upstream's HTTP status, so callers decide on it and not on the wording", () => {
    expect(new UpstreamError('x', 502, 404).httpStatus).toBe(404);
    expect(new UpstreamError('x: HTTP 404').httpStatus).toBeUndefined();
  });
});
