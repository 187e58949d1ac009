import { describe, expect, it } from 'vitest';
import { evaluateConditions, parseHttpDate, parseRange } from '../../../src/http/conditional';

describe('parseHttpDate', () => {
  const seconds = Date.UTC(1994, 10, 6, 8, 49, 37) / 1000;
  it('reads the three HTTP-date forms of RFC 9110 §5.6.7', () => {
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(seconds);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', Date.UTC(2026, 0, 1))).toBe(seconds);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994')).toBe(seconds);
  });

  it('rejects anything else, so the field is ignored', () => {
    for (const value of [
      '',
      'garbage',
      '2024',
      '1994-11-06T08:49:37Z',
      'Sun, 06 Nov 1994 08:49:37 UTC',
      'Sun, 6 Nov 1994 08:49:37 GMT',
      'Sun, 31 Feb 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 24:00:00 GMT',
      'Sun, 06 Nov 1994 08:60:37 GMT',
      'Sun, 06 Nov 1994 08:49:61 GMT',
      'Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT',
    ]) {
      expect(parseHttpDate(value), value).toBeNull();
    }
  });

  it('puts a two-digit RFC 850 year more than 50 years ahead in the previous century', () => {
    expect(parseHttpDate('Saturday, 01-Jan-77 00:00:00 GMT', Date.UTC(2026, 0, 1))).toBe(Date.UTC(1977, 0, 1) / 1000);
    expect(parseHttpDate('Friday, 01-Jan-66 00:00:00 GMT', Date.UTC(2026, 0, 1))).toBe(Date.UTC(2066, 0, 1) / 1000);
  });
});

describe('parseRange', () => {
  it('reads one byte range of each form', () => {
    expect(parseRange('bytes=0-99')).toEqual({ first: 0, last: 99 });
    expect(parseRange('bytes=10-')).toEqual({ first: 10 });
    expect(parseRange('bytes=-5')).toEqual({ suffix: 5 });
  });

  it('ignores other units, several ranges and malformed ones', () => {
    for (const value of [null, 'items=0-1', 'bytes=0-1,3-4', 'bytes=5-1', 'bytes=-', 'bytes 0-1', 'bytes=a-b', 'bytes=1234567890123456-']) {
      expect(parseRange(value), String(value)).toBeNull();
    }
  });
});

describe('evaluateConditions', () => {
  const validators = { etag: '"v1"', lastModified: new Date(Date.UTC(2026, 0, 1)), size: 10 };
  const evaluate = (method: string, headers: Record<string, string>) => evaluateConditions(method, new Headers(headers), validators);

  it('answers HEAD as GET, range included', () => {
    expect(evaluate('HEAD', { range: 'bytes=2-3' })).toEqual({ status: 206, offset: 2, length: 2 });
    expect(evaluate('HEAD', { 'if-none-match': '"v1"' })).toEqual({ status: 304 });
  });

  it('ignores If-Modified-Since and Range for other methods, and fails If-None-Match with 412 there', () => {
    expect(evaluate('POST', { 'if-modified-since': 'Fri, 01 Jan 2027 00:00:00 GMT', range: 'bytes=0-1' })).toEqual({ status: 200 });
    expect(evaluate('POST', { 'if-none-match': '*' })).toEqual({ status: 412, failed: 'If-None-Match' });
  });

  it('evaluates each condition as RFC 9110 §13.2.2 orders them', () => {
    const [earlier, same, later] = ['Wed, 31 Dec 2025 00:00:00 GMT', 'Thu, 01 Jan 2026 00:00:00 GMT', 'Fri, 02 Jan 2026 00:00:00 GMT'];
    // If-None-Match: weak comparison; a match is 304 for GET.
    expect(evaluate('GET', { 'if-none-match': '"v1"' })).toEqual({ status: 304 });
    expect(evaluate('GET', { 'if-none-match': 'W/"v1"' })).toEqual({ status: 304 });
    expect(evaluate('GET', { 'if-none-match': '"v0"' })).toEqual({ status: 200 });
    // If-Match: strong comparison; a failure is 412.
    expect(evaluate('GET', { 'if-match': '"v1"' })).toEqual({ status: 200 });
    expect(evaluate('GET', { 'if-match': '"v0"' })).toEqual({ status: 412, failed: 'If-Match' });
    expect(evaluate('GET', { 'if-match': 'W/"v1"' })).toEqual({ status: 412, failed: 'If-Match' });
    // Dates: modified since → 412 for If-Unmodified-Since; the same second is not modified (304).
    expect(evaluate('GET', { 'if-unmodified-since': earlier })).toEqual({ status: 412, failed: 'If-Unmodified-Since' });
    expect(evaluate('GET', { 'if-unmodified-since': same })).toEqual({ status: 200 });
    expect(evaluate('GET', { 'if-modified-since': same })).toEqual({ status: 304 });
    expect(evaluate('GET', { 'if-modified-since': earlier })).toEqual({ status: 200 });
    // If-None-Match present: If-Modified-Since is not evaluated.
    expect(evaluate('GET', { 'if-none-match': '"v0"', 'if-modified-since': later })).toEqual({ status: 200 });
    // An invalid date is ignored, not read as the next valid one (31 Feb 2026 would be 3 Mar, after Last-Modified).
    expect(evaluate('GET', { 'if-modified-since': 'Tue, 31 Feb 2026 00:00:00 GMT' })).toEqual({ status: 200 });
    expect(evaluate('GET', { 'if-unmodified-since': 'Wed, 31 Dec 2025 00:60:00 GMT' })).toEqual({ status: 200 });
  });

  it('ignores a Range it cannot read (→ 200, never 416), and refuses one that starts at the end (416)', () => {
    expect(evaluate('GET', { range: 'items=0-1' })).toEqual({ status: 200 });
    expect(evaluate('GET', { range: 'bytes=0-1,4-5' })).toEqual({ status: 200 });
    expect(evaluate('GET', { range: 'bytes=9-' })).toEqual({ status: 206, offset: 9, length: 1 });
    expect(evaluate('GET', { range: 'bytes=10-' })).toEqual({ status: 416 });
    // If-Range: only a strong etag (or the exact date) keeps the Range.
    expect(evaluate('GET', { range: 'bytes=0-1', 'if-range': '"v1"' })).toEqual({ status: 206, offset: 0, length: 2 });
    expect(evaluate('GET', { range: 'bytes=0-1', 'if-range': 'W/"v1"' })).toEqual({ status: 200 });
    expect(evaluate('GET', { range: 'bytes=0-1', 'if-range': '"v0"' })).toEqual({ status: 200 });
  });

  it('reads etags holding commas', () => {
    const withComma = { ...validators, etag: '"a,b"' };
    expect(evaluateConditions('GET', new Headers({ 'if-none-match': '"x", "a,b"' }), withComma)).toEqual({ status: 304 });
  });
});
