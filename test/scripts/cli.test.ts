import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeFailure, UsageError } from '../../scripts/lib/cli';
import { InputError } from '../../src/protocol/errors';
import {
  DamagedRecordError,
  LeaseBusyError,
  LeaseLostError,
  ListRebuildRaceError,
  NotStoredError,
  SealError,
  StoredReleaseMismatchError,
  VersionConflictError,
} from '../../src/store/errors';

describe('the CLI runner (scripts/lib/cli.ts)', () => {
  it('an internal failure prints one line and keeps its stack trace in a log file; --verbose prints the trace', () => {
    const error = new Error('local R2 write of x failed: 500\nSQLITE_BUSY');
    const quiet = describeFailure(error, 'usage', false);
    expect(quiet.code).toBe(3);
    expect(quiet.text.split('\n')).toHaveLength(1);
    expect(quiet.text).toMatch(/^error: local R2 write of x failed: 500 SQLITE_BUSY — an internal or infrastructure failure.*run the same command again/);
    const log = /stack trace in (\S+);/.exec(quiet.text)?.[1];
    expect(log, quiet.text).toBeDefined();
    expect(readFileSync(log!, 'utf8')).toContain(error.stack!);

    const verbose = describeFailure(error, 'usage', true);
    expect(verbose.code).toBe(3);
    expect(verbose.text).toContain(error.stack!);
  });

  it('input errors exit 1 and usage errors exit 2, without a trace', () => {
    expect(describeFailure(new InputError('bad name'), 'usage', false)).toEqual({ code: 1, text: 'error: bad name' });
    expect(describeFailure(new UsageError('--version is required'), 'the usage', false)).toEqual({
      code: 2,
      text: 'error: --version is required\n\nthe usage',
    });
  });

  it('store refusals exit 1 with their message; store failures exit 3 (run again) — the type decides, not the wording', () => {
    for (const refusal of [new VersionConflictError('x 1.0.0 is already published'), new NotStoredError('no x'), new LeaseBusyError('x is being written')]) {
      expect(describeFailure(refusal, 'usage', false), refusal.name).toEqual({ code: 1, text: `error: ${refusal.message}` });
    }
    const failures = [
      new StoredReleaseMismatchError('x does not match'),
      new ListRebuildRaceError('x kept changing'),
      new LeaseLostError('providers/x', 'taken over'),
      new DamagedRecordError('records/x', 'not JSON'),
      new SealError('SIGNING_KEY_SECRET is not set'),
    ];
    for (const failure of failures) {
      const described = describeFailure(failure, 'usage', true);
      expect(described.code, failure.name).toBe(3);
      expect(described.text, failure.name).toContain(`error: ${failure.message} — an internal or infrastructure failure`);
    }
  });
});
