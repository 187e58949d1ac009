import type { Env } from './env';
import { IMMUTABLE } from './http/responses';
import { ConfigError } from './http/errors';
import { parseHostname } from './protocol/address';
import { parseOidcSettings, type OidcSettings } from './access/config';
import { MIN_SECRET_LENGTH } from './store/keys/seal';
import { parsePublicDocuments, type PublicDocuments } from './store/static-documents';

/**
 * The Worker's settings: wrangler.toml's variables parsed once per Env
 * object (the runtime hands every request of an isolate the same one) into
 * typed values, so no request re-parses strings.
 */
export interface Settings {
  /** REGISTRY_HOSTNAME, lower case: the hostname of the providers this registry is the origin of. Throws ConfigError when it is not a hostname. */
  hostname: string;
  /** ACCESS: "public" only when it says exactly that; anything else, a typo included, fails closed. */
  access: 'public' | 'private';
  /** Milliseconds an isolate may reuse a version list or an absence (INDEX_CACHE_SECONDS, default 5). */
  listTtlMs: number;
  /** Cache-Control of version lists: `private` in private mode, max-age = the list TTL. */
  listCacheControl: string;
  /**
   * Cache-Control of documents with release-file URLs (find a package, mirror
   * VERSION.json): immutable in public mode (a minute with RELEASE_FILES=r2: presigned URLs expire); never
   * stored in private mode, since they are per-token and their signed URLs expire.
   */
  releaseDocumentCacheControl: string;
  /** ARCHIVE_BASE_URL without trailing slashes; '' keeps release-file URLs path-absolute. */
  archiveBaseUrl: string;
  /**
   * RELEASE_FILES=r2: where download documents point release files and module packages instead of the
   * Worker — presigned R2 S3 URLs (src/access/r2-urls.ts); null: the Worker's own routes (the default).
   */
  r2Files: R2FileSettings | null;
  /**
   * PUBLIC_DOCUMENTS=r2 (public mode only): the bucket's public custom domain (FILES_ORIGIN) serves static copies
   * of the providers.v1 and mirror documents and the release files (src/store/static-documents.ts); once
   * `npm run static-documents` checked that domain (servedPublicDocuments, src/access/release-urls.ts) discovery
   * points providers.v1 there and download documents name the files there. null: the Worker serves them (the default).
   * Throws ConfigError (503 naming it) while the setting is broken (listed in `problems`).
   */
  publicDocuments: PublicDocuments | null;
  /** Minutes a signed release-file URL stays valid (SIGNED_URL_MINUTES in (0, 10080], default 15). */
  signedUrlMinutes: number;
  /** URL_SIGNING_SECRET, '' when not set (private mode then answers 503 where it would sign or verify). Throws ConfigError when too short. */
  signingSecret: string;
  /** SIGNING_KEY_SECRET, '' when not set: opens registry-held signing keys (src/store/keys/held-keys.ts). Throws ConfigError when too short. */
  signingKeySecret: string;
  /** GZIP_DOCUMENTS = "true": stored documents go out gzip-compressed to clients that accept it. */
  gzipDocuments: boolean;
  /** Sign-in with the identity provider (OIDC_*, LOGIN_POLICY); null without OIDC_ISSUER. */
  oidc: OidcSettings | null;
  /** PULL_TIMEOUT_SECONDS > 0 in ms (every upstream timeout of the pull-through mirror); null: its defaults. */
  pullTimeoutMs: number | null;
  /** PULL_REFRESH_SECONDS > 0 in ms (how long a pulled version's manifest is trusted); null: its default. */
  pullRefreshMs: number | null;
  /** PULL_LIST_SECONDS > 0 in ms (how long an isolate reuses an upstream's version list); null: its default. */
  pullListMs: number | null;
  /** AUDIT_REFUSAL_WINDOW_SECONDS in (0, 3600] in ms (src/routes/publish/refusal-audit.ts); null: its default. */
  auditRefusalWindowMs: number | null;
  /** DOWNLOAD_BATCH_MS in [0, 10000] (src/downloads/count.ts); null: its default. */
  downloadBatchMs: number | null;
  /** MODULE_PROXY_MAX_MB > 0 in bytes (src/mirror/modules/proxy.ts lowers its package limit to it); null: its default. */
  moduleProxyMaxBytes: number | null;
  /**
   * Every setting the registry cannot run with as configured (configProblems): a REGISTRY_HOSTNAME that is
   * not a hostname, a secret shorter than MIN_SECRET_LENGTH, a sign-in configuration (OIDC_*, LOGIN_POLICY)
   * that does not parse. Reading `hostname`, `signingSecret` or `signingKeySecret` while its setting is one
   * of these throws ConfigError (503 naming it), so only the routes that need a broken setting refuse.
   */
  problems: readonly SettingProblem[];
}

/** R2's S3 API, to presign GETs of release files: endpoint without trailing slash, bucket, an R2 API token's S3 keys. */
export interface R2FileSettings {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** A setting the registry cannot run with: its name and a message naming it and the fix, never its value. */
export interface SettingProblem {
  setting: string;
  message: string;
}

// ConfigError: a setting the registry cannot run with; the Worker answers 503 naming it (src/http/errors.ts).
export { ConfigError };

/**
 * The shortest secret accepted (characters) for every secret the registry
 * keys its own cryptography with: URL_SIGNING_SECRET (signed URLs, sealed
 * sessions, admin sessions included) and SIGNING_KEY_SECRET (held signing
 * keys). `npm start` and `npm run deploy` generate 43/44 (32 random bytes).
 * OIDC_CLIENT_SECRET is the identity provider's to choose, not checked.
 */
export { MIN_SECRET_LENGTH };
export const CHECKED_SECRETS = ['URL_SIGNING_SECRET', 'SIGNING_KEY_SECRET'] as const;

/** The problem with secret `name` when it is set and shorter than MIN_SECRET_LENGTH, naming it and the fix (never the value); null when none. */
function weakSecretProblem(name: (typeof CHECKED_SECRETS)[number], value: string | undefined): string | null {
  if (!value || value.length >= MIN_SECRET_LENGTH) return null;
  return `${name} is ${value.length} characters; at least ${MIN_SECRET_LENGTH} are required: generate one with \`openssl rand -base64 32\` (wrangler secret put ${name}; locally .dev.vars)`;
}

const DEFAULT_SIGNED_URL_MINUTES = 15;
const MAX_SIGNED_URL_MINUTES = 7 * 24 * 60;

const parsed = new WeakMap<Env, Settings>();

/**
 * The settings of `env`, parsed on first use and memoised per Env object.
 * Never throws: a setting the registry cannot run with is listed in
 * `problems`, and reading the value it gives (`hostname`, `signingSecret`,
 * `signingKeySecret`) throws ConfigError naming it and the fix, so the
 * routes that need it answer 503 and the others keep serving; other
 * malformed values fall back to their defaults.
 */
export function settings(env: Env): Settings {
  let result = parsed.get(env);
  if (result === undefined) {
    result = parseSettings(env);
    parsed.set(env, result);
  }
  return result;
}

/**
 * The problems of a set of variables, as the Worker would find them: the one
 * parser (parseSettings) run on `vars` (wrangler.toml's [vars] and the
 * secrets, by name). For `npm start` and `npm run deploy`, which refuse to
 * start with any (scripts/lib/dev/preflight.ts).
 */
export function configProblems(vars: Record<string, string | undefined>): readonly SettingProblem[] {
  return parseSettings(vars as unknown as Env).problems;
}

/** `value`, or throws ConfigError(problem) when its setting has one: a broken value is never used. */
function usable<T>(value: T, problem: string | null): T {
  if (problem !== null) throw new ConfigError(problem);
  return value;
}

function parseSettings(env: Env): Settings {
  const problems: SettingProblem[] = [];
  const problem = (setting: string, message: string | null): string | null => {
    if (message !== null) problems.push({ setting, message });
    return message;
  };
  let hostname = '';
  let hostnameProblem: string | null = null;
  try {
    hostname = parseHostname(env.REGISTRY_HOSTNAME ?? '');
  } catch (error) {
    hostnameProblem = problem('REGISTRY_HOSTNAME', `REGISTRY_HOSTNAME in wrangler.toml: ${(error as Error).message}`);
  }
  // A short secret is refused outright, never used: it seals admin sessions and signs download URLs.
  const signingProblem = problem('URL_SIGNING_SECRET', weakSecretProblem('URL_SIGNING_SECRET', env.URL_SIGNING_SECRET));
  const keyProblem = problem('SIGNING_KEY_SECRET', weakSecretProblem('SIGNING_KEY_SECRET', env.SIGNING_KEY_SECRET));
  const oidc = parseOidcSettings(env);
  if (oidc?.problem) problem(/^[A-Z_]+/.exec(oidc.problem)?.[0] ?? 'OIDC_ISSUER', oidc.problem);
  const signingSecret = env.URL_SIGNING_SECRET ?? '';
  const signingKeySecret = env.SIGNING_KEY_SECRET ?? '';
  const access = env.ACCESS === 'public' ? 'public' : 'private';
  // RELEASE_FILES=r2 misconfigured: listed, and a 503 naming it only where release-file URLs are made.
  let r2Files: R2FileSettings | null = null;
  let r2Problem: string | null = null;
  try {
    r2Files = parseR2Files(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    r2Problem = problem(/^[A-Z_0-9]+/.exec(error.message)?.[0] ?? 'RELEASE_FILES', error.message);
  }
  // PUBLIC_DOCUMENTS=r2 misconfigured (or in private mode): listed, and a 503 naming it where it is needed.
  let publicDocuments: PublicDocuments | null = null;
  let documentsProblem: string | null = null;
  try {
    publicDocuments = parsePublicDocuments(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    documentsProblem = problem(/^[A-Z_]+(?= is| ")/.exec(error.message)?.[0] ?? 'PUBLIC_DOCUMENTS', error.message);
  }
  const seconds = Number(env.INDEX_CACHE_SECONDS ?? '5');
  const listTtlMs = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 5000;
  return {
    get hostname() {
      return usable(hostname, hostnameProblem);
    },
    access,
    listTtlMs,
    listCacheControl: `${access === 'private' ? 'private' : 'public'}, max-age=${Math.round(listTtlMs / 1000)}`,
    // With presigned R2 URLs a public document expires with its URLs: a client may keep it for a signing window.
    // (Also with PUBLIC_DOCUMENTS=r2: until its files origin passed the check the Worker serves presigned URLs, and
    // module downloads keep them.)
    releaseDocumentCacheControl: access === 'private' ? 'private, no-store' : r2Files ? 'public, max-age=60' : IMMUTABLE,
    get r2Files() {
      return usable(r2Files, r2Problem);
    },
    get publicDocuments() {
      return usable(publicDocuments, documentsProblem);
    },
    archiveBaseUrl: (env.ARCHIVE_BASE_URL ?? '').replace(/\/+$/, ''),
    signedUrlMinutes: parseSignedUrlMinutes(env.SIGNED_URL_MINUTES),
    get signingSecret() {
      return usable(signingSecret, signingProblem);
    },
    get signingKeySecret() {
      return usable(signingKeySecret, keyProblem);
    },
    gzipDocuments: env.GZIP_DOCUMENTS === 'true',
    oidc,
    pullTimeoutMs: secondsToMs(env.PULL_TIMEOUT_SECONDS, Infinity),
    pullRefreshMs: secondsToMs(env.PULL_REFRESH_SECONDS, Infinity),
    pullListMs: secondsToMs(env.PULL_LIST_SECONDS, Infinity),
    auditRefusalWindowMs: secondsToMs(env.AUDIT_REFUSAL_WINDOW_SECONDS, 3600),
    downloadBatchMs: downloadBatchMs(env.DOWNLOAD_BATCH_MS),
    moduleProxyMaxBytes: megabytes(env.MODULE_PROXY_MAX_MB),
    problems,
  };
}

/** A number of seconds in (0, max] as milliseconds; null when unset or anything else (the caller's default). */
function secondsToMs(raw: string | undefined, max: number): number | null {
  const seconds = Number(raw ?? '');
  return Number.isFinite(seconds) && seconds > 0 && seconds <= max ? seconds * 1000 : null;
}

/** A positive number of MB (MiB) in bytes; null when unset or anything else (the caller's default). */
function megabytes(raw: string | undefined): number | null {
  const mb = Number(raw ?? '');
  return Number.isFinite(mb) && mb > 0 ? Math.round(mb * 1024 * 1024) : null;
}

/** DOWNLOAD_BATCH_MS when a number in [0, 10000] (0 included: no batching); null when unset or anything else. */
function downloadBatchMs(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const ms = Number(raw);
  return Number.isFinite(ms) && ms >= 0 && ms <= 10_000 ? ms : null;
}

/** SIGNED_URL_MINUTES when it is a number in (0, 10080], else 15. */
/**
 * RELEASE_FILES: unset or "worker" → null; "r2" → the R2 S3 settings, every
 * one required. Throws ConfigError naming what is missing or malformed (an
 * endpoint must be https, or http on a loopback host for local tests).
 */
function parseR2Files(env: Env): R2FileSettings | null {
  const mode = env.RELEASE_FILES ?? '';
  if (mode === '' || mode === 'worker') return null;
  if (mode !== 'r2') throw new ConfigError(`RELEASE_FILES is "${mode}"; it is "worker" (the default) or "r2"`);
  const missing = (['R2_ENDPOINT', 'R2_BUCKET_NAME', 'R2_ACCESS_KEY_ID', 'R2_SECRET_ACCESS_KEY'] as const).filter((name) => !env[name]);
  if (missing.length > 0) {
    throw new ConfigError(`RELEASE_FILES=r2 needs ${missing.join(', ')} (npm run deploy -- --release-files r2 says how to create them)`);
  }
  const endpoint = env.R2_ENDPOINT!.replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ConfigError(`R2_ENDPOINT "${endpoint}" is not a URL; it is https://ACCOUNT_ID.r2.cloudflarestorage.com`);
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new ConfigError(`R2_ENDPOINT "${endpoint}" must be https (https://ACCOUNT_ID.r2.cloudflarestorage.com)`);
  }
  if (!/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(env.R2_BUCKET_NAME!)) throw new ConfigError(`R2_BUCKET_NAME "${env.R2_BUCKET_NAME}" is not an R2 bucket name`);
  return { endpoint, bucket: env.R2_BUCKET_NAME!, accessKeyId: env.R2_ACCESS_KEY_ID!, secretAccessKey: env.R2_SECRET_ACCESS_KEY! };
}

function parseSignedUrlMinutes(raw: string | undefined): number {
  const minutes = Number(raw ?? '');
  return raw && Number.isFinite(minutes) && minutes > 0 && minutes <= MAX_SIGNED_URL_MINUTES ? minutes : DEFAULT_SIGNED_URL_MINUTES;
}

/** True unless ACCESS is "public": private mode (bearer tokens for metadata, signed release-file URLs). */
export function isPrivate(env: Env): boolean {
  return settings(env).access === 'private';
}

/**
 * Cache-Control for a release file: immutable in public mode; in private
 * mode only a private cache may keep it, and no longer than its signed URL
 * is valid (its `expires`, already verified by requireSignedUrl).
 */
export function releaseFileCacheControl(request: Request, env: Env, now = Date.now()): string {
  if (!isPrivate(env)) return IMMUTABLE;
  const expires = Number(new URL(request.url).searchParams.get('expires'));
  const seconds = Number.isFinite(expires) ? Math.floor(expires - now / 1000) : 0;
  return `private, max-age=${Math.max(0, seconds)}`;
}
