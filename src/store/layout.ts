import type { ProviderAddress } from '../protocol/address';
import type { Platform } from '../protocol/platform';
import type { ModuleAddress, ModuleArchiveFormat } from '../protocol/modules-v1';

/**
 * The storage layout. This file alone knows KV key names and R2 object names;
 * the Worker and the scripts both derive every key through it. The map of every
 * name (each section below repeats its own with more detail):
 *
 * KV (values that are already response bodies are served byte for byte):
 *   v1/providers/HOST/NS/TYPE/versions                  registry "list versions" body
 *   v1/providers/HOST/NS/TYPE/VERSION/download/OS_ARCH  registry "find a package" body (immutable)
 *   v1/mirror/HOST/NS/TYPE/index.json                   mirror "list versions" body
 *   v1/mirror/HOST/NS/TYPE/VERSION.json                 mirror "list packages" body (immutable)
 *   records/HOST/NS/TYPE/VERSION                        version record (JSON), a copy of the R2 record below (read only for versions published before R2 records were kept)
 *   signing-keys/HOST/NS                                namespace public keys (JSON)
 *   tokens/SHA256                                       read or publish token record, by the SHA-256 of the token
 *   publishers/HOST/NS                                  trusted CI publishers stored before they moved to R2 (read until the next change moves them)
 *   held-signing-keys/HOST/NS                           the namespace's registry-held private signing key, encrypted (src/store/keys/held-keys.ts)
 *   pages/catalog                                       the home page's list of every provider
 *   pages/summaries/HOST/NS/TYPE                        one provider's catalogue entry
 *   pages/providers/HOST/NS/TYPE                        a provider's page data
 *   pages/docs/HOST/NS/TYPE/VERSION                     a version's docs (immutable)
 *   v1/modules/HOST/NS/NAME/SYSTEM/versions             modules.v1 "list versions" body
 *   v1/modules/HOST/NS/NAME/SYSTEM/VERSION/download     {"location": …} of the version's package (immutable)
 *   module-docs/HOST/NS/NAME/SYSTEM/VERSION             a module version's docs (immutable)
 *   module-records/HOST/NS/NAME/SYSTEM/VERSION          module version record, a copy of the R2 one
 *   module-catalog/HOST                                 every module of HOST (the /modules page)
 *   module-lifecycle/HOST/NS/NAME/SYSTEM                a copy of a module's lifecycle for its page
 *   mirror-policy                                       the pull-through policy (absent = no pull-through)
 *   files-origin-ready                                  PUBLIC_DOCUMENTS=r2: the FILES_ORIGIN `npm run static-documents` last checked (src/store/files-origin-ready.ts)
 *
 * R2:
 *   HOST/NS/TYPE/VERSION/FILENAME                       archives, SHA256SUMS, SHA256SUMS.sig
 *   modules/HOST/NS/NAME/SYSTEM/VERSION/FILENAME        a module package (NAME-SYSTEM-VERSION.tar.gz or .zip)
 *   .records/HOST/NS/TYPE/VERSION.json                  committed version record: the commit point and the source of truth (strongly consistent: lists, pages and bodies are built from these)
 *   .module-records/HOST/NS/NAME/SYSTEM/VERSION.json    committed module version record (the commit point)
 *   .leases/NAME                                        an exclusive writer lease (JSON owner + expiry): NAME = providers/HOST/NS/TYPE,
 *                                                       modules/HOST/NS/NAME/SYSTEM or pull/HOST/NS/TYPE/VERSION
 *   .index/HOST/NS/TYPE.json                            the provider's index: what its lists, page and catalogue entry are built from
 *                                                       (src/store/providers/version-index.ts); changed only by conditional writes, rebuilt from the records when missing
 *   .catalog/providers.json                             every provider's catalogue entry (the home page's list), changed only by conditional writes
 *   .lifecycle/providers/HOST/NS/TYPE.json              a provider's deprecations and withdrawals (the commit point of a lifecycle change)
 *   .lifecycle/modules/HOST/NS/NAME/SYSTEM.json         the same for a module
 *   .pull/HOST/NS/TYPE/VERSION.json                     pull-through: a verified upstream manifest
 *   .uploads/ID/session.json, files/FILENAME,           publish API uploads: the session, staged files, a multipart upload id,
 *     multipart/FILENAME, parts/FILENAME/N              and its parts' etags (never served or listed; expire after a day)
 *   sign-in (src/access/, src/store/identity/):
 *   .login-codes/SHA256                                 a one-time login.v1 code (JSON), by the SHA-256 of the code; claimed with If-Match
 *   .people/PERSON/tokens/SHA256                        index of a person's tokens (custom metadata), PERSON = SHA-256 of issuer + "\n" + subject
 *   .people/PERSON/revoked                              when an admin last revoked all of a person's tokens (ends older page sessions)
 *   .ended-sessions/SHA256                              a page session ended by sign-out, by the SHA-256 of its cookie value (src/store/identity/ended-sessions.ts)
 *   .audit/YYYY-MM-DD/HHMMSSmmm-NONCE.json              one audit entry (src/store/audit/), created only if absent, never rewritten
 *   provenance (src/store/provenance.ts, docs/provenance.md):
 *   .provenance/HOST/providers/NS/TYPE/VERSION/SHA256.json        a version's signed DSSE envelope, content-addressed, created only if absent
 *   .provenance/HOST/modules/NS/NAME/SYSTEM/VERSION/SHA256.json   the same for a module version
 *   .publishers/HOST/NS.json                            the namespace's trusted CI publishers (JSON list, src/store/publishers/record.ts), changed only by conditional writes
 *   .provenance-policy/HOST/NS.json                     the namespace requires build provenance (absent: it does not)
 *   .attestation-keys/HOST.json                         the registry's attestation keys, private halves sealed (src/store/keys/attestation-keys.ts)
 *   v1/providers/HOST/…, v1/mirror/HOST/…             PUBLIC_DOCUMENTS=r2: static copies of the KV documents above (staticDocumentKey)
 * Names starting with "." can never be a release file's key (a hostname cannot start with one), so the Worker never serves them.
 *
 * All names are lower case; HOST may carry a :port. The audit log's names are in layout-audit.ts and the
 * publish API's staging names in layout-uploads.ts, exported from here with the rest.
 */

export * from './layout-audit';
export * from './layout-uploads';

function providerPath({ hostname, namespace, type }: ProviderAddress): string {
  return `${hostname}/${namespace}/${type}`;
}

export const versionsDocumentKey = (address: ProviderAddress) => `v1/providers/${providerPath(address)}/versions`;

export const downloadDocumentKey = (address: ProviderAddress, version: string, platform: Platform) =>
  `v1/providers/${providerPath(address)}/${version}/download/${platform.os}_${platform.arch}`;

export const mirrorIndexKey = (address: ProviderAddress) => `v1/mirror/${providerPath(address)}/index.json`;

/** Prefix of every mirror index key (all hostnames), and the address a key names (null for any other key). */
export const mirrorIndexPrefix = 'v1/mirror/';
export function parseMirrorIndexKey(key: string): ProviderAddress | null {
  const match = /^v1\/mirror\/([^/]+)\/([^/]+)\/([^/]+)\/index\.json$/.exec(key);
  return match ? { hostname: match[1]!, namespace: match[2]!, type: match[3]! } : null;
}

export const mirrorVersionKey = (address: ProviderAddress, version: string) => `v1/mirror/${providerPath(address)}/${version}.json`;

/**
 * PUBLIC_DOCUMENTS=r2 (src/store/static-documents.ts): the R2 object holding the public static copy of KV
 * document `kvKey`, named as the path it is served at on the files origin — the same as the KV key for the
 * version lists and VERSION.json (v1/providers/HOST/NS/TYPE/versions, v1/mirror/HOST/NS/TYPE/index.json and
 * VERSION.json), v1/providers/HOST/NS/TYPE/VERSION/download/OS/ARCH for a download document (its KV key ends in
 * OS_ARCH); null for every other key (nothing else is copied). A release file's key starts with its hostname, so
 * these cannot collide with one unless a hostname is "v1".
 */
export function staticDocumentKey(kvKey: string): string | null {
  if (/^v1\/providers\/[^/]+\/[^/]+\/[^/]+\/versions$/.test(kvKey)) return kvKey;
  if (/^v1\/mirror\/[^/]+\/[^/]+\/[^/]+\/[^/]+\.json$/.test(kvKey)) return kvKey;
  const download = /^(v1\/providers\/[^/]+\/[^/]+\/[^/]+\/[^/]+\/download)\/([a-z0-9]+)_([a-z0-9]+)$/.exec(kvKey);
  return download ? `${download[1]}/${download[2]}/${download[3]}` : null;
}

export const versionRecordPrefix = (address: ProviderAddress) => `records/${providerPath(address)}/`;

export const versionRecordKey = (address: ProviderAddress, version: string) => `${versionRecordPrefix(address)}${version}`;

export const signingKeysKey = (hostname: string, namespace: string) => `signing-keys/${hostname}/${namespace}`;

/** KV: trusted publishers of a namespace as stored before they moved to R2 (src/store/publishers/read.ts). */
export const legacyPublishersKey = (hostname: string, namespace: string) => `publishers/${hostname}/${namespace}`;
/** R2: trusted publishers of a namespace (JSON list; src/store/publishers/), changed only by conditional writes. */
export const publishersObject = (hostname: string, namespace: string) => `.publishers/${hostname}/${namespace}.json`;
/** R2: the one publish a CI ID token started (src/store/publishers/token-uses.ts), by SHA-256 of issuer and `jti`; kept until the token's exp. */
export const ciTokenUseKey = (hostname: string, digest: string) => `.ci-token-uses/${hostname}/${digest}`;

/** The registry-held signing key of a namespace, encrypted at rest (src/store/keys/held-keys.ts). */
export const heldSigningKeyKey = (hostname: string, namespace: string) => `held-signing-keys/${hostname}/${namespace}`;

export const tokenKey = (tokenSha256Hex: string) => `tokens/${tokenSha256Hex}`;
export const tokenPrefix = 'tokens/';

// ---- Sign-in (src/access/, src/store/identity/) ----
/** A one-time login.v1 code, by the SHA-256 of the code (R2: single use needs strong consistency). */
export const loginCodeObjectKey = (codeSha256Hex: string) => `.login-codes/${codeSha256Hex}`;

/** Prefix of one person's token index (R2), PERSON = hex SHA-256 of issuer + "\n" + subject. */
export const personTokensPrefix = (personKey: string) => `.people/${personKey}/tokens/`;
export const personTokenObjectKey = (personKey: string, tokenSha256Hex: string) => `${personTokensPrefix(personKey)}${tokenSha256Hex}`;
/** When an admin last revoked all of a person's tokens (R2, custom metadata `at`): their older page sessions end too. */
export const personRevokedKey = (personKey: string) => `.people/${personKey}/revoked`;

/** A page session ended by POST /logout (R2, custom metadata `expires`), by the SHA-256 of its cookie value: a copy of the cookie is refused. */
export const endedSessionKey = (cookieSha256Hex: string) => `.ended-sessions/${cookieSha256Hex}`;

/** R2 object name of a release file (archive, SHA256SUMS or its signature). */
export const releaseObjectKey = (address: ProviderAddress, version: string, filename: string) => `${providerPath(address)}/${version}/${filename}`;

/**
 * URL path at which the Worker serves a release file. Path-absolute, so the
 * client resolves it against whichever host answered the metadata request.
 */
export const releaseFilePath = (address: ProviderAddress, version: string, filename: string) => `/v1/archives/${providerPath(address)}/${version}/${filename}`;

// Pages for people (src/store/pages/read.ts): documents materialised at publish time, one KV read per page.
//   pages/catalog                          the home page's list of every provider (JSON)
//   pages/summaries/HOST/NS/TYPE           one provider's catalogue entry (the catalogue is rebuilt from these)
//   pages/providers/HOST/NS/TYPE           a provider's page data: versions, keys; platforms and hashes of the newest 50
//   pages/docs/HOST/NS/TYPE/VERSION        a version's docs (normalised schema, immutable)
export const catalogKey = 'pages/catalog';
export const summaryPrefix = 'pages/summaries/';
export const summaryKey = (address: ProviderAddress) => `${summaryPrefix}${providerPath(address)}`;
export const providerPageKey = (address: ProviderAddress) => `pages/providers/${providerPath(address)}`;
/** Prefix of the page data of every provider in a namespace (which key signed which version: npm run keys -- list). */
export const namespacePagesPrefix = (hostname: string, namespace: string) => `pages/providers/${hostname}/${namespace}/`;
export const docsPrefix = (address: ProviderAddress) => `pages/docs/${providerPath(address)}/`;
export const docsKey = (address: ProviderAddress, version: string) => `${docsPrefix(address)}${version}`;

// ---- Modules (modules.v1) ----
//
// KV:
//   v1/modules/HOST/NS/NAME/SYSTEM/versions             modules.v1 "list versions" body
//   v1/modules/HOST/NS/NAME/SYSTEM/VERSION/download     {"location": …} of the version's package (immutable)
//   module-docs/HOST/NS/NAME/SYSTEM/VERSION             docs extracted at publish (inputs, outputs, README HTML; immutable)
//   module-records/HOST/NS/NAME/SYSTEM/VERSION          version record (JSON: filename, sha256, size), a copy of the R2 one
//   module-catalog/HOST                                 every module of HOST with its versions (for the /modules page)
// R2:
//   modules/HOST/NS/NAME/SYSTEM/VERSION/FILENAME        the package (NAME-SYSTEM-VERSION.tar.gz or .zip)
//   .module-records/HOST/NS/NAME/SYSTEM/VERSION.json    committed version record: the commit point; list and catalog are rebuilt from these

function modulePath({ hostname, namespace, name, system }: ModuleAddress): string {
  return `${hostname}/${namespace}/${name}/${system}`;
}

export const moduleVersionsKey = (address: ModuleAddress) => `v1/modules/${modulePath(address)}/versions`;

export const moduleDownloadKey = (address: ModuleAddress, version: string) => `v1/modules/${modulePath(address)}/${version}/download`;

export const moduleDocsKey = (address: ModuleAddress, version: string) => `module-docs/${modulePath(address)}/${version}`;

export const moduleRecordPrefix = (address: ModuleAddress) => `module-records/${modulePath(address)}/`;

export const moduleRecordKey = (address: ModuleAddress, version: string) => `${moduleRecordPrefix(address)}${version}`;

/** Prefix of every module version record of a hostname (for the catalog rebuild). */
export const moduleRecordsOfHostPrefix = (hostname: string) => `module-records/${hostname}/`;

/** Parses a key under moduleRecordsOfHostPrefix back into its parts; null for anything else. */
export function parseModuleRecordKey(key: string): { address: ModuleAddress; version: string } | null {
  const parts = key.split('/');
  if (parts.length !== 6 || parts[0] !== 'module-records') return null;
  const [, hostname, namespace, name, system, version] = parts as [string, string, string, string, string, string];
  return { address: { hostname, namespace, name, system }, version };
}

export const moduleCatalogKey = (hostname: string) => `module-catalog/${hostname}`;

/** R2 object name of a module package. */
export const moduleObjectKey = (address: ModuleAddress, version: string, filename: string) => `modules/${modulePath(address)}/${version}/${filename}`;

/** URL path at which the Worker serves a module package (path-absolute, like releaseFilePath). */
export const moduleArchivePath = (address: ModuleAddress, version: string, filename: string) =>
  `/v1/module-archives/${modulePath(address)}/${version}/${filename}`;

/**
 * The R2 object name behind a path the Worker serves a release file or module
 * package at (releaseFilePath, moduleArchivePath: their inverse), for
 * pointing clients at R2 itself; null for any other path, or one whose object
 * name would start with "." (never a release file).
 */
export function objectKeyOfServedPath(path: string): string | null {
  const key = path.startsWith('/v1/archives/')
    ? path.slice('/v1/archives/'.length)
    : path.startsWith('/v1/module-archives/')
      ? `modules/${path.slice('/v1/module-archives/'.length)}`
      : null;
  return key === null || key.startsWith('.') || key.includes('/.') ? null : key;
}

/** File name of a module package: NAME-SYSTEM-VERSION.tar.gz (or .zip for a supplied zip). */
export const moduleArchiveFilename = (address: ModuleAddress, version: string, format: ModuleArchiveFormat) =>
  `${address.name}-${address.system}-${version}.${format}`;

/** R2 object of a committed version record: the publish's commit point and the source of list rebuilds (R2 lists are strongly consistent, KV's are not). */
export const committedRecordPrefix = (address: ProviderAddress) => `.records/${providerPath(address)}/`;
export const committedRecordKey = (address: ProviderAddress, version: string) => `${committedRecordPrefix(address)}${version}.json`;

/** R2 object of a provider's index (src/store/providers/version-index.ts): what its lists are built from, one object however many versions. */
export const providerIndexPrefix = '.index/';
export const providerIndexKey = (address: ProviderAddress) => `${providerIndexPrefix}${providerPath(address)}.json`;
/** The address an index key names; null for any other key. */
export function parseProviderIndexKey(key: string): ProviderAddress | null {
  const match = /^\.index\/([^/]+)\/([^/]+)\/([^/]+)\.json$/.exec(key);
  return match ? { hostname: match[1]!, namespace: match[2]!, type: match[3]! } : null;
}

/** R2 object of the provider catalogue (every provider's entry; the KV pages/catalog is written from it). */
export const catalogObjectKey = '.catalog/providers.json';

/** R2 object holding the lease called `name` (see src/store/lease.ts). */
export const leaseObjectKey = (name: string) => `.leases/${name}`;

/** Lease name of one provider's writers: publish-provider and mirror sync take it (one writer per provider). */
export const providerLeaseName = (address: ProviderAddress) => `providers/${providerPath(address)}`;

/** R2 object of a committed module version record: the module publish's commit point and the source of its list and the catalog (strongly consistent). */
export const moduleCommittedRecordsOfHostPrefix = (hostname: string) => `.module-records/${hostname}/`;
export const moduleCommittedRecordPrefix = (address: ModuleAddress) => `.module-records/${modulePath(address)}/`;
export const moduleCommittedRecordKey = (address: ModuleAddress, version: string) => `${moduleCommittedRecordPrefix(address)}${version}.json`;

/** Parses a key under moduleCommittedRecordsOfHostPrefix back into its parts; null for anything else. */
export function parseModuleCommittedRecordKey(key: string): { address: ModuleAddress; version: string } | null {
  const match = /^\.module-records\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)\.json$/.exec(key);
  return match ? { address: { hostname: match[1]!, namespace: match[2]!, name: match[3]!, system: match[4]! }, version: match[5]! } : null;
}

/** Name of the lease a module publish holds (one writer per module): see src/store/lease.ts. */
export const moduleLeaseName = (address: ModuleAddress) => `modules/${modulePath(address)}`;

// ---- Lifecycle (deprecate, withdraw; src/store/lifecycle/) ----
// R2 (the commit point of a lifecycle change; the lists and pages are rebuilt from it):
//   .lifecycle/providers/HOST/NS/TYPE.json              a provider's deprecation and its versions' deprecations and withdrawals
//   .lifecycle/modules/HOST/NS/NAME/SYSTEM.json         the same for a module
// KV:
//   module-lifecycle/HOST/NS/NAME/SYSTEM                a copy of the module's lifecycle for its page (providers carry theirs in the page data)
export const providerLifecycleKey = (address: ProviderAddress) => `.lifecycle/providers/${providerPath(address)}.json`;
export const moduleLifecycleKey = (address: ModuleAddress) => `.lifecycle/modules/${modulePath(address)}.json`;
export const moduleLifecyclePageKey = (address: ModuleAddress) => `module-lifecycle/${modulePath(address)}`;
export const moduleLifecycleOfHostPrefix = (hostname: string) => `.lifecycle/modules/${hostname}/`;

// ---- Pull-through mirror (src/mirror/, src/store/mirror/) ----
//
// KV:
//   mirror-policy                                       the pull-through policy (canonical JSON; absent = no pull-through)
// R2:
//   .pull/HOST/NS/TYPE/VERSION.json                     a verified upstream manifest (signed SHA256SUMS, per-platform documents)
//   .leases/pull/HOST/NS/TYPE/VERSION                   the lease of the one request pulling an archive of that version
export const mirrorPolicyKey = 'mirror-policy';

/** KV: PUBLIC_DOCUMENTS=r2's marker, written by `npm run static-documents` once its check of FILES_ORIGIN passed (src/store/files-origin-ready.ts). */
export const filesOriginReadyKey = 'files-origin-ready';
export const pullManifestKey = (address: ProviderAddress, version: string) => `.pull/${providerPath(address)}/${version}.json`;
export const pullLeaseName = (address: ProviderAddress, version: string) => `pull/${providerPath(address)}/${version}`;

// Provenance (src/store/provenance.ts, src/store/keys/attestation-keys.ts).
export const providerStatementPrefix = (address: ProviderAddress, version: string) =>
  `.provenance/${address.hostname}/providers/${address.namespace}/${address.type}/${version}/`;
export const moduleStatementPrefix = (address: ModuleAddress, version: string) =>
  `.provenance/${address.hostname}/modules/${address.namespace}/${address.name}/${address.system}/${version}/`;
export const provenancePolicyKey = (hostname: string, namespace: string) => `.provenance-policy/${hostname}/${namespace}.json`;
export const attestationKeysKey = (hostname: string) => `.attestation-keys/${hostname}.json`;

// ---- OCI view (src/store/oci.ts, src/routes/oci/, docs/oci.md) ----
// R2 only, every object created once (If-None-Match: *) and never rewritten:
//   .oci/REPO/tags/VERSION          the version's image index (providers) or image manifest (modules), its digest in custom metadata
//   .oci/REPO/manifests/HEX         every manifest and index by the hex of its sha256 digest
//   .oci/REPO/blobs/HEX             a layer: no bytes, custom metadata `key` = the R2 object it is (the stored zip)
//   .oci/REPO/zips/VERSION.zip      the deterministic zip of a module version published as tar.gz (OpenTofu takes zip only)
// REPO = providers/HOST/NS/TYPE or modules/HOST/NS/NAME/SYSTEM (the store's name; the wire's names are in src/routes/oci/).
export const ociProviderRepo = (address: ProviderAddress) => `providers/${providerPath(address)}`;
export const ociModuleRepo = (address: ModuleAddress) => `modules/${modulePath(address)}`;
export const ociTagKey = (repo: string, version: string) => `.oci/${repo}/tags/${version}`;
export const ociManifestKey = (repo: string, hex: string) => `.oci/${repo}/manifests/${hex}`;
export const ociBlobKey = (repo: string, hex: string) => `.oci/${repo}/blobs/${hex}`;
export const ociModuleZipKey = (repo: string, version: string) => `.oci/${repo}/zips/${version}.zip`;
