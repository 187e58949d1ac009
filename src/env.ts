/** The Worker's bindings and variables, as declared in wrangler.toml. */
export interface Env {
  REGISTRY_KV: KVNamespace;
  REGISTRY_R2: R2Bucket;
  /** Hostname in the source addresses of the providers this registry is the origin of. */
  REGISTRY_HOSTNAME: string;
  /** "public" or "private". */
  ACCESS: string;
  /** Seconds an isolate may reuse a version list before reading KV again. */
  INDEX_CACHE_SECONDS: string;
  /** Absolute base URL for release-file URLs; empty for URLs relative to the response. */
  ARCHIVE_BASE_URL: string;
  /**
   * "true": send stored documents gzip-compressed (compressed once per cached
   * document) with Content-Encoding: gzip. On Cloudflare the edge decodes them
   * for the rare client that does not accept gzip; Miniflare (wrangler dev)
   * does not, so local dev leaves this off.
   */
  GZIP_DOCUMENTS?: string;
  /** HMAC key for signed release-file URLs (a secret; private mode only). */
  URL_SIGNING_SECRET?: string;
  /** Key-encryption secret of registry-held signing keys (a secret; src/store/keys/held-keys.ts). */
  SIGNING_KEY_SECRET?: string;
  /** Pull-through: seconds allowed for an upstream's headers, a small body, and between archive chunks (default 10 / 30). */
  PULL_TIMEOUT_SECONDS?: string;
  /** Download counts: one SQLite-backed Durable Object per provider or module (src/downloads/). Optional: without it nothing is counted. */
  DOWNLOADS?: DurableObjectNamespace<import('./downloads/counter').DownloadCounter>;
  /** Download counts: ms an isolate gathers a package's downloads before one request to its object (default 500; src/downloads/count.ts). */
  DOWNLOAD_BATCH_MS?: string;
  /** Seconds of the window in which at most 10 refusals of unverified CI tokens are audited one by one (default 60; src/routes/publish/refusal-audit.ts). */
  AUDIT_REFUSAL_WINDOW_SECONDS?: string;
  /** Pull-through: seconds before a version's verified upstream manifest is checked against the upstream again (default 3600). */
  PULL_REFRESH_SECONDS?: string;
  /** Pull-through and module proxy: seconds an isolate reuses an upstream's version list (default 300). */
  PULL_LIST_SECONDS?: string;
  /** Module proxy: largest upstream package in MB (default and maximum 16; unpacked at most twice that). */
  MODULE_PROXY_MAX_MB?: string;
  /**
   * "r2": download documents point release files and module packages at presigned R2 S3 URLs (the
   * Worker's own routes stay and keep working); "worker" or unset: at the Worker (docs/serving.md).
   */
  RELEASE_FILES?: string;
  /** "r2" (public mode only): static copies of the providers.v1 and mirror documents on the bucket's public custom domain, FILES_ORIGIN (src/store/static-documents.ts). */
  PUBLIC_DOCUMENTS?: string;
  /** PUBLIC_DOCUMENTS=r2: the R2 bucket's public custom domain, https://files.example.com (no path). */
  FILES_ORIGIN?: string;
  /** RELEASE_FILES=r2: R2's S3 endpoint, https://ACCOUNT_ID.r2.cloudflarestorage.com. */
  R2_ENDPOINT?: string;
  /** RELEASE_FILES=r2: the bucket REGISTRY_R2 is bound to (wrangler.toml's bucket_name). */
  R2_BUCKET_NAME?: string;
  /** RELEASE_FILES=r2: an R2 API token's S3 access key id (a secret; read-only on the bucket is enough). */
  R2_ACCESS_KEY_ID?: string;
  /** RELEASE_FILES=r2: that token's S3 secret access key (a secret). */
  R2_SECRET_ACCESS_KEY?: string;
  /** Minutes a signed release-file URL stays valid (private mode). */
  SIGNED_URL_MINUTES?: string;
  /** Sign in with the organisation's identity provider (issue 21, src/access/): the OpenID Provider's issuer URL. Unset = no login. */
  OIDC_ISSUER?: string;
  /** The client id registered at the identity provider. */
  OIDC_CLIENT_ID?: string;
  /** The client secret (a secret); absent for a public client that uses PKCE only. */
  OIDC_CLIENT_SECRET?: string;
  /** JSON: ID-token claims → token scopes and the admin role (src/access/policy.ts). */
  LOGIN_POLICY?: string;
}
