/**
 * RFC 9110 conditional requests (§13) and byte ranges (§14) for a stored
 * object, as a pure function of the request's method and headers and the
 * object's validators. Release files (and any other R2 object the Worker
 * serves) are answered from its outcome, whether the object comes from R2
 * or from the edge cache, so both give the same status for the same request.
 *
 * Malformed validators never fail a request: a field that does not parse
 * (`If-None-Match: garbage`, `W/garbage`, `,`, an unquoted etag, an invalid
 * date) is ignored as if absent, as §13.1 allows and §13.1.3/§13.1.4 require
 * for dates. A Range in an unknown unit, a malformed one, or one with several
 * ranges is ignored (the full representation is sent, §14.2 allows it).
 *
 * HEAD is evaluated exactly like GET, Range included, so a HEAD answers the
 * status and headers the same GET would.
 */

/** What the conditions are evaluated against. */
export interface Validators {
  /** The strong entity tag, quoted (`"abc"`), as sent in ETag. */
  etag: string;
  /** Last modification, sent as Last-Modified (second precision). */
  lastModified: Date;
  /** The size of the whole representation in bytes. */
  size: number;
}

export type Outcome =
  | { status: 200 }
  | { status: 206; offset: number; length: number }
  | { status: 304 }
  | { status: 412; failed: 'If-Match' | 'If-Unmodified-Since' | 'If-None-Match' }
  | { status: 416 };

/**
 * The status a GET or HEAD of an object with `validators` gets, evaluating
 * the preconditions in §13.2.2's order: If-Match (fails → 412), else
 * If-Unmodified-Since (modified since → 412); If-None-Match (matches → 304),
 * else If-Modified-Since (not modified → 304); then Range, guarded by
 * If-Range (a strong etag or date that matches; otherwise the Range is
 * ignored → 200): one satisfiable range → 206 with its offset and length,
 * an unsatisfiable one → 416. Never throws.
 */
export function evaluateConditions(method: string, headers: Headers, validators: Validators): Outcome {
  const getOrHead = method === 'GET' || method === 'HEAD';
  const lastModified = Math.floor(validators.lastModified.getTime() / 1000);

  const ifMatch = parseEtagCondition(headers.get('if-match'));
  if (ifMatch !== null) {
    if (!ifMatch.any && !ifMatch.tags.some((tag) => strongMatch(tag, validators.etag))) {
      return { status: 412, failed: 'If-Match' };
    }
  } else {
    const since = parseHttpDate(headers.get('if-unmodified-since'));
    if (since !== null && lastModified > since) return { status: 412, failed: 'If-Unmodified-Since' };
  }

  const ifNoneMatch = parseEtagCondition(headers.get('if-none-match'));
  if (ifNoneMatch !== null) {
    if (ifNoneMatch.any || ifNoneMatch.tags.some((tag) => weakMatch(tag, validators.etag))) {
      return getOrHead ? { status: 304 } : { status: 412, failed: 'If-None-Match' };
    }
  } else if (getOrHead) {
    const since = parseHttpDate(headers.get('if-modified-since'));
    if (since !== null && lastModified <= since) return { status: 304 };
  }

  if (!getOrHead) return { status: 200 };
  const range = parseRange(headers.get('range'));
  if (range === null || !ifRangeHolds(headers.get('if-range'), validators.etag, lastModified)) return { status: 200 };
  return resolveRange(range, validators.size);
}

/** A single byte range as requested: first-last, first- (last = undefined) or -suffix. */
export type ByteRange = { first: number; last?: number } | { suffix: number };

/**
 * Parses a Range header into one byte range; null when absent, in another
 * unit, malformed (including last < first), or asking for several ranges —
 * all cases in which the header is ignored and the whole object sent.
 */
export function parseRange(header: string | null): ByteRange | null {
  if (header === null) return null;
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match || match[1]!.length > 15 || match[2]!.length > 15) return null;
  const [, first, last] = match;
  if (first === '') return last === '' ? null : { suffix: Number(last) };
  if (last === '') return { first: Number(first) };
  if (Number(last) < Number(first)) return null;
  return { first: Number(first), last: Number(last) };
}

/** The bytes a single range selects in an object of `size` bytes: 206 with offset/length, or 416 when unsatisfiable. */
export function resolveRange(range: ByteRange, size: number): Outcome {
  if ('suffix' in range) {
    if (range.suffix === 0 || size === 0) return { status: 416 };
    const length = Math.min(range.suffix, size);
    return { status: 206, offset: size - length, length };
  }
  if (range.first >= size) return { status: 416 };
  const last = Math.min(range.last ?? size - 1, size - 1);
  return { status: 206, offset: range.first, length: last - range.first + 1 };
}

/** If-Range (§13.1.5): absent → true; a strong etag equal to ours, or a date equal to Last-Modified → true; anything else (weak, other, malformed) → false, so the Range is ignored. */
function ifRangeHolds(header: string | null, etag: string, lastModified: number): boolean {
  if (header === null) return true;
  const value = header.trim();
  if (value.startsWith('"')) {
    const tags = parseEtagList(value);
    return tags !== null && tags.length === 1 && strongMatch(tags[0]!, etag);
  }
  return parseHttpDate(value) === lastModified;
}

type EtagCondition = { any: true } | { any: false; tags: string[] };

/** If-Match / If-None-Match: "*" or a list of entity tags; null when absent or malformed (then ignored). */
function parseEtagCondition(header: string | null): EtagCondition | null {
  if (header === null) return null;
  if (header.trim() === '*') return { any: true };
  const tags = parseEtagList(header);
  return tags === null || tags.length === 0 ? null : { any: false, tags };
}

/**
 * A comma-separated list of entity tags (`"x"`, `W/"x"`), empty elements
 * allowed (§5.6.1); null when anything else is in it. Etags may contain
 * commas, so the list is scanned rather than split.
 */
function parseEtagList(value: string): string[] | null {
  const tags: string[] = [];
  let i = 0;
  const skipSpace = () => {
    while (value[i] === ' ' || value[i] === '\t') i++;
  };
  while (i < value.length) {
    skipSpace();
    if (i >= value.length) break;
    if (value[i] === ',') {
      i++;
      continue;
    }
    const start = i;
    if (value.startsWith('W/', i)) i += 2;
    if (value[i] !== '"') return null;
    const close = value.indexOf('"', i + 1);
    if (close < 0) return null;
    const opaque = value.slice(i + 1, close);
    if (!/^[\x21\x23-\x7e\x80-\xff]*$/.test(opaque)) return null;
    tags.push(value.slice(start, close + 1));
    i = close + 1;
    skipSpace();
    if (i < value.length && value[i] !== ',') return null;
  }
  return tags;
}

/** Strong comparison (§8.8.3.2): both strong and byte for byte equal. */
function strongMatch(tag: string, etag: string): boolean {
  return !tag.startsWith('W/') && !etag.startsWith('W/') && tag === etag;
}

/** Weak comparison: equal opaque tags, weakness ignored. */
function weakMatch(tag: string, etag: string): boolean {
  return tag.replace(/^W\//, '') === etag.replace(/^W\//, '');
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

/**
 * An HTTP-date (§5.6.7: IMF-fixdate, or the obsolete RFC 850 and asctime
 * forms) as Unix seconds; null when absent or not a valid HTTP-date (such a
 * field is ignored).
 */
export function parseHttpDate(header: string | null, now = Date.now()): number | null {
  if (header === null) return null;
  const value = header.trim();
  let parts: { day: string; month: string; year: number; h: string; m: string; s: string } | undefined;
  let match: RegExpExecArray | null;
  if ((match = IMF_FIXDATE.exec(value))) {
    parts = { day: match[1]!, month: match[2]!, year: Number(match[3]), h: match[4]!, m: match[5]!, s: match[6]! };
  } else if ((match = RFC850_DATE.exec(value))) {
    // A two-digit year more than 50 years in the future means the previous century (§5.6.7).
    const thisYear = new Date(now).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + Number(match[3]);
    if (year > thisYear + 50) year -= 100;
    parts = { day: match[1]!, month: match[2]!, year, h: match[4]!, m: match[5]!, s: match[6]! };
  } else if ((match = ASCTIME_DATE.exec(value))) {
    parts = { day: match[2]!.trim(), month: match[1]!, year: Number(match[6]), h: match[3]!, m: match[4]!, s: match[5]! };
  }
  if (!parts) return null;
  const month = MONTHS.indexOf(parts.month);
  const [day, h, m, s] = [Number(parts.day), Number(parts.h), Number(parts.m), Number(parts.s)];
  if (h > 23 || m > 59 || s > 60) return null;
  const ms = Date.UTC(parts.year, month, day, h, m, Math.min(s, 59));
  if (new Date(ms).getUTCDate() !== day) return null; // 31 Feb and the like
  return ms / 1000;
}
