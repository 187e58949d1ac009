import { AwsV4Signer } from 'aws4fetch';
import type { R2FileSettings } from '../config';
import { objectKeyOfServedPath } from '../store/layout';

/**
 * Release files straight from R2 (RELEASE_FILES=r2): a release file's or
 * module package's Worker path becomes a presigned GET URL of its object on
 * R2's S3 API (SigV4 query signing, path style:
 * ENDPOINT/BUCKET/KEY?X-Amz-Algorithm=…&X-Amz-Expires=…&X-Amz-Signature=…).
 * The signature covers the method, the object's path and the expiry, so a URL
 * fetches that one object until it expires and nothing else; the bucket stays
 * private. The R2 API token behind the keys needs only Object Read on the
 * bucket. Terraform and OpenTofu fetch these URLs without credentials, like
 * the Worker's signed URLs; a HEAD on a presigned GET URL is refused by S3, and
 * neither client sends one for a download document's URLs.
 */

// Derived signing keys, per secret and day (aws4fetch's cache): one derivation per isolate per day.
const signingKeys = new Map<string, ArrayBuffer>();

/**
 * A presigned GET URL of the object behind `path` (a path-absolute Worker
 * path, see objectKeyOfServedPath), valid from `signedAt` (ms) for `seconds`
 * (at most 604,800, S3's limit). Throws an Error for a path that is no
 * release file's (never expected: callers pass stored release URLs).
 */
export async function presignedR2Url(config: R2FileSettings, path: string, signedAt: number, seconds: number): Promise<string> {
  const key = objectKeyOfServedPath(path);
  if (key === null) throw new Error(`${path} is not a release file's path`);
  const url = new URL(`${config.endpoint}/${config.bucket}/${key}`);
  url.searchParams.set('X-Amz-Expires', String(Math.min(604_800, Math.max(1, Math.floor(seconds)))));
  const signer = new AwsV4Signer({
    method: 'GET',
    url: url.toString(),
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
    service: 's3',
    region: 'auto',
    signQuery: true,
    datetime: new Date(signedAt).toISOString().replace(/[:-]|\.\d{3}/g, ''),
    cache: signingKeys,
  });
  return (await signer.sign()).url.toString();
}

// A path-absolute release-file or module-package URL inside a JSON body (as signed-urls.ts's RELEASE_URL).
const STORED_URL = /"(\/v1\/(?:module-)?archives\/[^"\\?#]+)"/g;

/**
 * Every path-absolute release-file URL ("/v1/archives/…") in a stored JSON
 * body replaced by its presigned R2 URL (presignedR2Url). Other bytes are
 * kept. Throws an Error (fail closed) if a release URL is left behind.
 */
export async function withPresignedR2Urls(body: string, config: R2FileSettings, signedAt: number, seconds: number): Promise<string> {
  const paths = [...new Set([...body.matchAll(STORED_URL)].map((m) => m[1]!))];
  const urls = new Map(await Promise.all(paths.map(async (p) => [p, await presignedR2Url(config, p, signedAt, seconds)] as const)));
  const result = body.replace(STORED_URL, (_, path: string) => JSON.stringify(urls.get(path)!));
  if (/"\/v1\/(module-)?archives\//.test(result)) throw new Error('a release-file URL in a stored body could not be presigned');
  return result;
}
