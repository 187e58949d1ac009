import { describe, expect, it } from 'vitest';
import { errorToResponse, refusalStatus } from '../../../src/http/errors';
import { InputError } from '../../../src/protocol/errors';
import {
  DamagedRecordError,
  LeaseBusyError,
  LeaseLostError,
  ListRebuildRaceError,
  NotStoredError,
  SealError,
  StoredReleaseMismatchError,
  VersionConflictError,
} from '../../../src/store/errors';
import { ConfigError } from '../../../src/config';

describe('store outcomes become HTTP statuses in one place (src/http/errors.ts)', () => {
  it('refusals answer their 4xx with the message in the registry error shape', async () => {
    const cases: [Error, number][] = [
      [new InputError('bad name'), 400],
      [new InputError('too big', 413), 413],
      [new NotStoredError('provider x has no published version'), 404],
      [new VersionConflictError('x 1.0.0 is already published with different contents'), 409],
      [new LeaseBusyError('x is being written by y'), 409],
    ];
    for (const [error, status] of cases) {
      expect(refusalStatus(error), error.name).toBe(status);
      const response = errorToResponse(error);
      expect(response.status, error.name).toBe(status);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.json()).toEqual({ errors: [error.message] });
    }
  });

  it('store failures and anything unknown answer 500 without their message (internals stay in the log)', async () => {
    const failures = [
      new StoredReleaseMismatchError('x: stored files do not match its record'),
      new ListRebuildRaceError('x kept changing'),
      new LeaseLostError('providers/x', 'taken over'),
      new DamagedRecordError('records/x', 'not JSON'),
      new SealError('SIGNING_KEY_SECRET is not set'),
      new Error('R2 down'),
    ];
    const logged = console.error;
    console.error = () => {};
    try {
      for (const error of failures) {
        expect(refusalStatus(error), error.name).toBeNull();
        const response = errorToResponse(error);
        expect(response.status, error.name).toBe(500);
        expect(await response.json()).toEqual({ errors: ['internal error'] });
      }
    } finally {
      console.error = logged;
    }
  });

  it('a setting the registry cannot run with (ConfigError) answers 503 naming it and the fix, so the operator knows what to change', async () => {
    const logged = console.error;
    console.error = () => {};
    try {
      const error = new ConfigError('URL_SIGNING_SECRET is not set; private mode needs it (wrangler secret put URL_SIGNING_SECRET)');
      expect(refusalStatus(error)).toBeNull();
      const response = errorToResponse(error);
      expect(response.status).toBe(503);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(await response.json()).toEqual({ errors: [`the registry is misconfigured: ${error.message}`] });
    } finally {
      console.error = logged;
    }
  });
});
