import { createHash, createHmac } from 'node:crypto';

/**
 * An independent check of SigV4 presigned URLs (query signing), written from
 * AWS's specification ("Authenticating Requests: Using Query Parameters") with
 * node:crypto — not with aws4fetch, which signs them — because s3rver, which
 * plays R2's S3 API on this machine, does not verify SigV4 signatures. R2
 * checks them this way: method, path, every query parameter but the signature,
 * the host header, an unsigned payload, and the expiry.
 */

const encode = (text: string) => encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text).digest();

/**
 * null when `url` (path and query as received) is a valid presigned request
 * with `method` for `host` at `now` (ms); else why not. `secretFor` gives the
 * secret access key of an access key id (undefined: unknown).
 */
export function presignedRequestProblem(method: string, url: string, host: string, secretFor: (id: string) => string | undefined, now: number): string | null {
  const parsed = new URL(url, 'https://placeholder');
  const q = parsed.searchParams;
  if (q.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return 'not a SigV4 presigned URL';
  const credential = q.get('X-Amz-Credential')?.split('/') ?? [];
  const [id, day, region, service, terminator] = credential;
  const secret = id === undefined ? undefined : secretFor(id);
  if (secret === undefined || credential.length !== 5 || terminator !== 'aws4_request') return 'unknown access key or malformed credential';
  const date = q.get('X-Amz-Date') ?? '';
  const expires = Number(q.get('X-Amz-Expires'));
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date);
  if (!match || !date.startsWith(day!) || !Number.isInteger(expires) || expires < 1 || expires > 604_800) return 'malformed date or expiry';
  const signedAt = Date.UTC(+match[1]!, +match[2]! - 1, +match[3]!, +match[4]!, +match[5]!, +match[6]!);
  if (now >= signedAt + expires * 1000) return 'expired';
  if (q.get('X-Amz-SignedHeaders') !== 'host') return 'signed headers other than host';
  // The path as S3 canonicalises it: each segment decoded, then URI-encoded once.
  const path = parsed.pathname
    .split('/')
    .map((segment) => encode(decodeURIComponent(segment)))
    .join('/');
  const query = [...q.entries()]
    .filter(([name]) => name !== 'X-Amz-Signature')
    .map(([name, value]) => [encode(name), encode(value)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const canonical = [method, path, query, `host:${host}`, '', 'host', 'UNSIGNED-PAYLOAD'].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, day!), region!), service!), 'aws4_request');
  const expected = createHmac('sha256', key).update(toSign).digest('hex');
  return expected === q.get('X-Amz-Signature') ? null : 'signature does not match';
}
