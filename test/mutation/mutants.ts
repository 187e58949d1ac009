/**
 * The mutants `npm run mutation` plants, one at a time: small, plausible
 * weakenings of the rules that protect integrity and access, as a reviewer
 * might let slip. `from` must occur exactly once in `file`; `tests` are the
 * test files expected to go red. A mutant that the tests cannot notice gets
 * `survives`: why that is acceptable (equivalent behaviour, or guarded by
 * something else), and it is reported as a survivor with that reason.
 */
export interface Mutant {
  id: string;
  file: string;
  description: string;
  from: string;
  to: string;
  tests: string[];
  survives?: string;
}

/** The folder a mutant is counted under in the report. */
export function folderOf(file: string): string {
  return file.startsWith('scripts/lib/') ? 'scripts/lib (publish, release, archive, lease, local-store, mirror)' : file.split('/').slice(0, 2).join('/');
}

const HASHES = ['test/protocol/hashes.test.ts', 'test/scripts/hashes.test.ts'];
const ERRORS = ['test/protocol/address.test.ts', 'test/worker/errors.test.ts', 'test/worker/registry.test.ts', 'test/worker/mirror.test.ts'];
const SCOPES = ['test/worker-private/scope-rules.test.ts', 'test/worker-private/tokens.test.ts'];
const SIGNED = ['test/worker-private/signed-url-binding.test.ts', 'test/worker-private/signed-urls.test.ts'];
const CACHE = ['test/worker/cache-lifetimes.test.ts', 'test/worker/caching.test.ts'];
const STORE = ['test/worker/version-order.test.ts', 'test/worker/immutability.test.ts', 'test/worker/registry.test.ts', 'test/worker/mirror.test.ts'];
const VALIDATION = ['test/scripts/publish-validation.test.ts', 'test/scripts/immutability.test.ts'];
const ARCHIVE = ['test/scripts/provider/archive.test.ts', 'test/scripts/hashes.test.ts', 'test/scripts/publish-validation.test.ts'];

const RECORDS = ['test/worker/records.test.ts', 'test/worker/immutability.test.ts'];
const SESSIONS = ['test/worker-private/pages.test.ts'];
const LEASE = ['test/scripts/lease.test.ts'];
const CONDITIONS = ['test/worker/http/conditional.test.ts', 'test/worker/release-file-conditions.test.ts'];

export const MUTANTS: Mutant[] = [
  // src/protocol
  {
    id: 'h1-utf16-order', file: 'src/protocol/hashes.ts', tests: HASHES,
    description: 'h1 sorts entry names by UTF-16 code units instead of UTF-8 bytes',
    from: 'const sorted = [...entries].sort((a, b) => compareBytes(a.name, b.name));',
    to: 'const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));',
  },
  {
    id: 'h1-line-format', file: 'src/protocol/hashes.ts', tests: [...HASHES, 'test/worker/independent-hashes.test.ts'],
    description: 'h1 lines "hex name" (one space) instead of dirhash\'s "hex␠␠name"',
    from: 'summary += `${entry.sha256Hex}  ${entry.name}\\n`;',
    to: 'summary += `${entry.sha256Hex} ${entry.name}\\n`;',
  },
  {
    id: 'zh-upper-case', file: 'src/protocol/hashes.ts', tests: HASHES,
    description: 'zh accepts upper-case hex (lock files would disagree with Terraform\'s)',
    from: 'const HEX64 = /^[0-9a-f]{64}$/;',
    to: 'const HEX64 = /^[0-9a-fA-F]{64}$/;',
  },
  {
    id: 'shasums-one-space', file: 'src/protocol/hashes.ts', tests: HASHES,
    description: 'SHA256SUMS lines with one space (not sha256sum\'s format)',
    from: '.map((entry) => `${zhHash(entry.sha256Hex).slice(3)}  ${entry.filename}\\n`)',
    to: '.map((entry) => `${zhHash(entry.sha256Hex).slice(3)} ${entry.filename}\\n`)',
  },
  {
    id: 'shasums-duplicates', file: 'src/protocol/hashes.ts', tests: HASHES,
    description: 'parseShasums accepts a file listed twice',
    from: 'if (seen.has(filename)) throw',
    to: 'if (false) throw',
  },
  {
    id: 'module-link-escapes', file: 'src/protocol/module-package.ts', tests: ['test/protocol/module-package.test.ts', 'test/scripts/publish-module.test.ts'],
    description: 'a module package link pointing outside the package is accepted (publish-module, the publish API, the module proxy)',
    from: 'if (level < 0) throw new InputError(`${archive}: link',
    to: 'if (false) throw new InputError(`${archive}: link',
  },
  {
    id: 'sums-missing-line', file: 'src/protocol/release-shasums.ts', tests: ['test/protocol/release-shasums.test.ts', ...VALIDATION],
    description: 'a SHA256SUMS without a line for one of the archives is accepted (publish CLI and publish API)',
    from: 'if (hash === undefined) {',
    to: 'if (false) {',
  },
  {
    id: 'name-trailing-dash', file: 'src/protocol/address.ts', tests: ERRORS,
    description: 'names may end with a dash',
    from: 'const NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;',
    to: 'const NAME_PATTERN = /^[a-z0-9][a-z0-9-]*$/;',
  },
  {
    id: 'name-case-sensitive', file: 'src/protocol/address.ts', tests: ERRORS,
    description: 'names are not lower-cased (Acme and acme become different providers)',
    from: 'const name = raw.toLowerCase();',
    to: 'const name = raw;',
  },
  {
    id: 'name-length', file: 'src/protocol/address.ts', tests: ERRORS,
    description: 'names may be 65 characters',
    from: 'const MAX_NAME_LENGTH = 64;',
    to: 'const MAX_NAME_LENGTH = 65;',
  },
  {
    id: 'version-loose', file: 'src/protocol/version.ts', tests: ERRORS,
    description: 'versions accepted when semver can parse them at all (v1.0.0, 01.1.0)',
    from: 'if (!parsed || canonical !== raw) {',
    to: 'if (!parsed) {',
  },
  {
    id: 'platform-case', file: 'src/protocol/platform.ts', tests: ['test/worker/cache-lifetimes.test.ts', ...ERRORS],
    description: 'os/arch in request paths not lower-cased',
    from: 'const platform = { os: os.toLowerCase(), arch: arch.toLowerCase() };',
    to: 'const platform = { os, arch };',
  },
  {
    id: 'platform-unknown-os', file: 'src/protocol/platform.ts', tests: ['test/protocol/platform.test.ts'],
    description: 'publishing accepts an unknown GOOS (a typo such as "linx")',
    from: 'if (!(KNOWN_OS as readonly string[]).includes(platform.os)) {',
    to: 'if (false) {',
  },
  {
    id: 'pessimistic-3-parts', file: 'src/protocol/constraints.ts', tests: ['test/protocol/constraints.test.ts'],
    description: '"~> 1.2.3" treated like "~> 1.2" (allows 1.3.0)',
    from: 'const upper = parts >= 3 ?',
    to: 'const upper = parts > 3 ?',
  },
  {
    id: 'prerelease-implicit', file: 'src/protocol/constraints.ts', tests: ['test/protocol/constraints.test.ts'],
    description: 'prereleases match without being named exactly',
    from: 'if (!namedExactly) return false;',
    to: 'if (false) return false;',
  },
  {
    id: 'constraint-greater-equal', file: 'src/protocol/constraints.ts', tests: ['test/protocol/constraints.test.ts'],
    description: '">" behaves as ">="',
    from: "case '>': return semver.gt(candidate, version);",
    to: "case '>': return semver.gte(candidate, version);",
  },

  {
    id: 'unknown-os-400', file: 'src/protocol/platform.ts', tests: ['test/worker/cache-lifetimes.test.ts', ...ERRORS],
    description: 'a well-formed but unknown os in a request path is "bad request" (400) instead of "not found" (404)',
    from: 'if (!TOKEN_PATTERN.test(platform.os)) throw',
    to: 'if (!TOKEN_PATTERN.test(platform.os) || !(KNOWN_OS as readonly string[]).includes(platform.os)) throw',
  },

  // src/http: RFC 9110 conditions and ranges
  {
    id: 'inm-ignores-etag', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'If-None-Match with our etag does not answer 304 (only "*" does)',
    from: 'if (ifNoneMatch.any || ifNoneMatch.tags.some((tag) => weakMatch(tag, validators.etag))) {',
    to: 'if (ifNoneMatch.any) {',
  },
  {
    id: 'inm-strong-compare', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'If-None-Match compares strongly (W/"etag" no longer answers 304)',
    from: 'ifNoneMatch.tags.some((tag) => weakMatch(tag, validators.etag))',
    to: 'ifNoneMatch.tags.some((tag) => strongMatch(tag, validators.etag))',
  },
  {
    id: 'inm-method-304', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'a matching If-None-Match answers 304 for every method (412 required for others)',
    from: "return getOrHead ? { status: 304 } : { status: 412, failed: 'If-None-Match' };",
    to: 'return { status: 304 };',
  },
  {
    id: 'if-match-ignored', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'a failed If-Match does not answer 412',
    from: 'if (!ifMatch.any && !ifMatch.tags.some((tag) => strongMatch(tag, validators.etag))) {',
    to: 'if (false) {',
  },
  {
    id: 'if-match-weak', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'If-Match compares weakly (W/"etag" passes)',
    from: '!ifMatch.tags.some((tag) => strongMatch(tag, validators.etag))',
    to: '!ifMatch.tags.some((tag) => weakMatch(tag, validators.etag))',
  },
  {
    id: 'ius-ignored', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'If-Unmodified-Since earlier than Last-Modified does not answer 412',
    from: "if (since !== null && lastModified > since) return { status: 412, failed: 'If-Unmodified-Since' };",
    to: '',
  },
  {
    id: 'ims-boundary', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'If-Modified-Since equal to Last-Modified answers 200 instead of 304',
    from: 'if (since !== null && lastModified <= since) return { status: 304 };',
    to: 'if (since !== null && lastModified < since) return { status: 304 };',
  },
  {
    id: 'ims-despite-inm', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'If-Modified-Since is evaluated even when If-None-Match is present and does not match',
    from: '} else if (getOrHead) {\n    const since = parseHttpDate(headers.get(\'if-modified-since\'));',
    to: '}\n  if (getOrHead) {\n    const since = parseHttpDate(headers.get(\'if-modified-since\'));',
  },
  {
    id: 'invalid-day-accepted', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'an impossible date (31 Feb) is read as the next valid one instead of being ignored',
    from: 'if (new Date(ms).getUTCDate() !== day) return null;',
    to: '',
  },
  {
    id: 'invalid-time-accepted', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'an impossible time (08:60:00) is accepted instead of being ignored',
    from: 'if (h > 23 || m > 59 || s > 60) return null;',
    to: '',
  },
  {
    id: 'range-any-unit', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'a Range in any unit is read as bytes',
    from: 'const match = /^\\s*bytes\\s*=',
    to: 'const match = /^\\s*\\w+\\s*=',
  },
  {
    id: 'range-unknown-unit-416', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'a Range that is not read (another unit, malformed) answers 416 instead of being ignored',
    from: 'if (range === null || !ifRangeHolds(',
    to: "if (range === null && headers.get('range') !== null) return { status: 416 };\n  if (range === null || !ifRangeHolds(",
  },
  {
    id: 'if-range-any-etag', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'If-Range with another etag keeps the Range (a part of other bytes is sent)',
    from: 'return tags !== null && tags.length === 1 && strongMatch(tags[0]!, etag);',
    to: 'return tags !== null && tags.length === 1;',
  },
  {
    id: 'range-start-at-end', file: 'src/http/conditional.ts', tests: CONDITIONS,
    description: 'a range starting at the end of the file is satisfiable (206 with no bytes)',
    from: 'if (range.first >= size) return { status: 416 };',
    to: 'if (range.first > size) return { status: 416 };',
  },

  // src/auth
  {
    id: 'scope-namespace-prefix', file: 'src/access/tokens.ts', tests: SCOPES,
    description: 'a scope "acme" also grants "acme-internal" (prefix match)',
    from: 'if (slash === -1) return hostname === ownHost && namespace === scope;',
    to: 'if (slash === -1) return hostname === ownHost && namespace.startsWith(scope);',
  },
  {
    id: 'scope-bare-any-host', file: 'src/access/tokens.ts', tests: SCOPES,
    description: 'a bare namespace scope grants that namespace on every hostname',
    from: 'if (slash === -1) return hostname === ownHost && namespace === scope;',
    to: 'if (slash === -1) return namespace === scope;',
  },
  {
    id: 'scope-host-prefix', file: 'src/access/tokens.ts', tests: SCOPES,
    description: 'HOST/… scopes match hostnames that start with HOST',
    from: "return hostname === host && (ns === '*' || ns === namespace);",
    to: "return hostname.startsWith(host) && (ns === '*' || ns === namespace);",
  },
  {
    id: 'scope-host-ignores-namespace', file: 'src/access/tokens.ts', tests: SCOPES,
    description: 'HOST/NAMESPACE grants every namespace of HOST',
    from: "return hostname === host && (ns === '*' || ns === namespace);",
    to: 'return hostname === host;',
  },
  {
    id: 'scope-any-wildcard', file: 'src/access/tokens.ts', tests: SCOPES,
    description: 'any scope containing * grants everything',
    from: "if (scope === '*') return true;",
    to: "if (scope.includes('*')) return true;",
  },
  {
    id: 'scope-not-lowercased', file: 'src/access/tokens.ts', tests: SCOPES,
    description: 'HOST/NAMESPACE scopes keep their case (never match the lower-cased request)',
    from: "return parts[1] === '*' ? `${host}/*` : `${host}/${parseModuleName(parts[1]!, 'namespace')}`;",
    to: "return parts[1] === '*' ? `${host}/*` : `${host}/${parts[1]!}`;",
  },
  {
    id: 'token-expiry-second', file: 'src/access/tokens.ts', tests: ['test/worker-private/scope-rules.test.ts', 'test/worker-private/tokens.test.ts'],
    description: 'a token is still accepted at its expiry instant',
    from: 'if (record.expires !== null && Date.parse(record.expires) <= now) {',
    to: 'if (record.expires !== null && Date.parse(record.expires) < now) {',
  },
  {
    id: 'token-hash-unchecked', file: 'src/access/tokens.ts', tests: SCOPES,
    description: 'the record\'s own hash is not compared with the token\'s',
    from: 'if (record === null || !constantTimeEqualText(record.sha256, hash)) {',
    to: 'if (record === null) {',
  },
  {
    id: 'signed-url-expiry-second', file: 'src/access/signed-urls.ts', tests: SIGNED,
    description: 'a signed URL is still valid during its expiry second',
    from: 'if (expires * 1000 <= now) {',
    to: 'if (expires * 1000 < now) {',
  },
  {
    id: 'signed-url-any-method', file: 'src/access/signed-urls.ts', tests: SIGNED,
    description: 'the signature is checked as if every request were a GET',
    from: "const method = request.method === 'HEAD' ? 'GET' : request.method;",
    to: "const method = 'GET';",
  },
  {
    id: 'signed-url-path-case', file: 'src/access/signed-urls.ts', tests: SIGNED,
    description: 'the path is compared case-insensitively',
    from: 'const expected = await mac(config, method, url.pathname, expires);',
    to: 'const expected = await mac(config, method, url.pathname.toLowerCase(), expires);',
  },
  {
    id: 'signed-url-expiry-rounded-up', file: 'src/access/signed-urls.ts', tests: SIGNED,
    description: 'signed URLs live up to a second longer than configured',
    from: 'const expires = Math.floor(now / 1000) + Math.round(minutes * 60);',
    to: 'const expires = Math.ceil(now / 1000) + Math.round(minutes * 60);',
  },
  {
    id: 'signed-url-repeated-params', file: 'src/access/signed-urls.ts', tests: SIGNED,
    description: 'repeated expires/signature parameters are not refused up front',
    from: 'if (expiresValues.length !== 1 || signatureValues.length !== 1 || ',
    to: 'if (',
  },

  {
    id: 'session-mac-unchecked', file: 'src/access/session.ts', tests: SESSIONS,
    description: 'a session cookie is accepted without verifying its HMAC (a forged cookie signs anyone in)',
    from: 'if (given === null || !constantTimeEqual(given, await mac(env, hash, expires))) return null;',
    to: 'if (given === null) return null;',
  },
  {
    id: 'session-expiry-ignored', file: 'src/access/session.ts', tests: SESSIONS,
    description: 'an expired session cookie is still accepted',
    from: 'if (expires * 1000 <= now) return null;',
    to: '',
  },
  {
    id: 'session-token-expiry-ignored', file: 'src/access/session.ts', tests: SESSIONS,
    description: 'a session outlives the expiry of its token',
    from: 'if (record.expires !== null && Date.parse(record.expires) <= now) return null;',
    to: '',
  },
  {
    id: 'session-hash-unchecked', file: 'src/access/session.ts', tests: SESSIONS,
    description: 'the token record read for a session is not compared with the session\'s token hash',
    from: 'if (record === null || !constantTimeEqualText(record.sha256, hash)) return null;',
    to: 'if (record === null) return null;',
  },
  {
    id: 'session-cookie-outlives-token', file: 'src/access/session.ts', tests: SESSIONS,
    description: 'a new session lasts 12 hours even when its token expires sooner',
    from: 'const expires = Math.min(Math.floor(now / 1000) + SESSION_SECONDS, tokenExpires);',
    to: 'const expires = Math.floor(now / 1000) + SESSION_SECONDS;',
  },
  {
    id: 'same-origin-missing-accepted', file: 'src/access/session.ts', tests: SESSIONS,
    description: 'a form post without an Origin header counts as same-origin (CSRF)',
    from: 'return origin !== null && origin === new URL(request.url).origin;',
    to: 'return origin === null || origin === new URL(request.url).origin;',
  },
  {
    id: 'module-guard-missing', file: 'src/access/access.ts', tests: ['test/worker-private/modules.test.ts'],
    description: 'modules.v1 routes answer without a token in private mode',
    from: "return isPrivate(env) ? checkReadToken(request, env, (raw) => parseModuleName(raw, 'namespace')) : undefined;",
    to: 'return undefined;',
  },
  {
    id: 'signed-url-guard-missing', file: 'src/access/access.ts', tests: SIGNED,
    description: 'release files are served without a valid signature in private mode',
    from: 'return isPrivate(env) ? checkSignedUrl(request, env) : undefined;',
    to: 'return undefined;',
  },
  {
    id: 'mirror-scope-own-host', file: 'src/access/access.ts', tests: SCOPES,
    description: 'a mirror request\'s scope is checked against this registry\'s hostname instead of the mirrored one',
    from: 'const hostname = request.params.hostname === undefined',
    to: 'const hostname = true',
  },

  // src/store
  {
    id: 'same-release-ignores-sha256', file: 'src/store/providers/version-records.ts', tests: [...STORE, 'test/scripts/immutability.test.ts'],
    description: 'immutability compares file names and sizes but not SHA-256',
    from: '.map((p) => [p.filename, p.shasum, p.size]));',
    to: '.map((p) => [p.filename, p.size]));',
  },
  {
    id: 'same-release-ignores-protocols', file: 'src/store/providers/version-records.ts', tests: [...STORE, 'test/scripts/immutability.test.ts'],
    description: 'immutability ignores the protocols',
    from: 'return files(a) === files(b) && sums && JSON.stringify(a.protocols) === JSON.stringify(b.protocols);',
    to: 'return files(a) === files(b) && sums;',
  },
  {
    id: 'skip-upload-by-size', file: 'src/store/records.ts', tests: RECORDS,
    description: 'an R2 object of the right size is kept without comparing its SHA-256',
    from: 'if (head && head.size === file.size && head.customMetadata?.sha256 === file.sha256Hex) {',
    to: 'if (head && head.size === file.size) {',
  },
  {
    id: 'absent-cached-forever', file: 'src/store/read-document.ts', tests: CACHE,
    description: '"not found" for an immutable document is cached until evicted',
    from: 'document !== null && immutable ? Number.POSITIVE_INFINITY : listTtlMs',
    to: 'immutable ? Number.POSITIVE_INFINITY : listTtlMs',
  },
  {
    id: 'versions-list-immutable', file: 'src/store/providers/read.ts', tests: CACHE,
    description: 'the providers.v1 version list is cached as if immutable',
    from: 'readDocument(kv, versionsDocumentKey(address), false, listTtlMs);',
    to: 'readDocument(kv, versionsDocumentKey(address), true, listTtlMs);',
  },
  {
    id: 'mirror-index-immutable', file: 'src/store/mirror/read.ts', tests: CACHE,
    description: 'the mirror index.json is cached as if immutable',
    from: 'readDocument(kv, mirrorIndexKey(address), false, listTtlMs);',
    to: 'readDocument(kv, mirrorIndexKey(address), true, listTtlMs);',
  },
  {
    id: 'versions-unsorted', file: 'src/store/providers/documents.ts', tests: STORE,
    description: 'version lists in record order, not semver order',
    from: 'return providerVersionsBody(sortVersions([...byVersion.keys()]).map((version) => {',
    to: 'return providerVersionsBody([...byVersion.keys()].map((version) => {',
  },
  {
    id: 'mirror-without-zh', file: 'src/store/providers/documents.ts', tests: [...STORE, 'test/worker/independent-hashes.test.ts'],
    description: 'mirror VERSION.json lists only h1',
    from: 'hashes: [p.h1, zhHash(p.shasum)] }',
    to: 'hashes: [p.h1] }',
  },
  {
    id: 'token-record-bad-expiry', file: 'src/store/tokens/read.ts', tests: SCOPES,
    description: 'a token record with an unreadable expiry is accepted (never expires)',
    from: "if (r.expires !== null && (typeof r.expires !== 'string' || Number.isNaN(Date.parse(r.expires)))) return null;",
    to: '',
  },

  {
    id: 'skip-upload-ignores-size', file: 'src/store/records.ts', tests: RECORDS,
    description: 'an R2 object with the right SHA-256 in its metadata is kept whatever its size',
    from: 'if (head && head.size === file.size && head.customMetadata?.sha256 === file.sha256Hex) {',
    to: 'if (head && head.customMetadata?.sha256 === file.sha256Hex) {',
  },
  {
    id: 'verify-ignores-sha256', file: 'src/store/records.ts', tests: RECORDS,
    description: 'verification of a published version accepts a stored file of the right size with other bytes',
    from: '&& (want.sha256 === undefined || actual.sha256 === want.sha256);',
    to: ';',
  },
  {
    id: 'verify-ignores-size', file: 'src/store/records.ts', tests: RECORDS,
    description: 'verification of a published version accepts a stored file of another size',
    from: 'const fine = actual && (want.size === undefined || actual.size === want.size) && ',
    to: 'const fine = actual && ',
  },
  {
    id: 'commit-record-overwrites', file: 'src/store/records.ts', tests: RECORDS,
    description: 'a version record is written even when one exists (no If-None-Match: *)',
    from: "httpMetadata: { contentType: 'application/json' },\n    onlyIf: { etagDoesNotMatch: '*' },",
    to: "httpMetadata: { contentType: 'application/json' },",
  },
  {
    id: 'lease-create-unconditional', file: 'src/store/lease.ts', tests: LEASE,
    description: 'a free lease is created without If-None-Match: * (two creators both win)',
    from: "const created = await blobs.put(key, text, { onlyIf: { etagDoesNotMatch: '*' }, ",
    to: 'const created = await blobs.put(key, text, { ',
  },
  {
    id: 'lease-takeover-unconditional', file: 'src/store/lease.ts', tests: LEASE,
    description: 'an expired lease is taken over without If-Match (two waiters both take it)',
    from: 'const taken = await blobs.put(key, stateText(), { onlyIf: { etagMatches: current.etag }, ',
    to: 'const taken = await blobs.put(key, stateText(), { ',
  },
  {
    id: 'lease-renew-unconditional', file: 'src/store/lease.ts', tests: LEASE,
    description: 'a renewal overwrites the lease without If-Match (a holder that was taken over never learns it)',
    from: 'const written = await blobs.put(key, stateText(), { onlyIf: { etagMatches: etag }, ',
    to: 'const written = await blobs.put(key, stateText(), { ',
  },
  {
    id: 'lease-expired-kept', file: 'src/store/lease.ts', tests: LEASE,
    description: 'an expired lease of another host is never taken over (waits until maxWaitMs)',
    from: ': state.expiresAt <= now ? `expired',
    to: ': false ? `expired',
  },
  {
    id: 'lease-live-taken-over', file: 'src/store/lease.ts', tests: LEASE,
    description: 'a live lease within one TTL of its expiry is taken over (its holder is about to renew)',
    from: ': state.expiresAt <= now ? `expired',
    to: ': state.expiresAt <= now + ttl ? `expired',
  },
  {
    id: 'lease-check-ignores-expiry', file: 'src/store/lease.ts', tests: LEASE,
    description: 'check() does not notice that the lease expired without a successful renewal',
    from: "if (!lost && Date.now() >= expiresAt) lost = 'it expired before it could be renewed';",
    to: '',
  },

  {
    id: 'download-signature-url', file: 'src/store/providers/documents.ts', tests: [...STORE, 'test/worker/signatures.test.ts'],
    description: 'the download document points shasums_signature_url at the SHA256SUMS file',
    from: 'shasums_signature_url: file(record.shasumsSignatureFilename),',
    to: 'shasums_signature_url: file(record.shasumsFilename),',
  },
  {
    id: 'package-hashes-h1-only', file: 'src/store/providers/documents.ts', tests: [...STORE, 'test/worker/independent-hashes.test.ts'],
    description: "OpenTofu's packages object lists only h1 (lock files miss the zh of other platforms)",
    from: 'return [zhHash(pkg.shasum), pkg.h1];',
    to: 'return [pkg.h1];',
  },

  // scripts/lib: publish, release, archive, local-store
  {
    id: 'publish-no-immutability', file: 'scripts/lib/provider/publish.ts', tests: VALIDATION,
    description: 'publish-provider does not compare with the published version before the lease (a --dry-run of other bytes says "already published with these bytes")',
    from: 'if (existing && !sameRelease(existing, draft)) throw differentContentsError(draft, existing);',
    to: 'if (false) throw differentContentsError(draft, existing);',
  },
  {
    id: 'sums-hash-unchecked', file: 'src/protocol/release-shasums.ts', tests: VALIDATION,
    description: 'a supplied SHA256SUMS line is not compared with the archive',
    from: 'if (hash !== archive.sha256Hex) {',
    to: 'if (false) {',
  },
  {
    id: 'sums-extra-archive', file: 'src/protocol/release-shasums.ts', tests: VALIDATION,
    description: 'a SHA256SUMS listing an archive that was not given is accepted',
    from: 'if (isArchiveLine(entry.filename) && !given.has(entry.filename)) {',
    to: 'if (false) {',
  },
  {
    id: 'platform-twice', file: 'scripts/lib/provider/release.ts', tests: VALIDATION,
    description: 'a platform given twice is accepted',
    from: 'if (previous) throw',
    to: 'if (false) throw',
  },
  {
    id: 'signature-without-sums', file: 'scripts/lib/provider/release.ts', tests: VALIDATION,
    description: 'a .sig without its SHA256SUMS is accepted',
    from: 'if (signature && !shasums) {',
    to: 'if (false) {',
  },
  {
    id: 'empty-protocols', file: 'scripts/lib/provider/release-checks.ts', tests: ['test/scripts/provider/release.test.ts', ...VALIDATION],
    description: 'a manifest with protocol_versions [] is accepted',
    from: 'if (!Array.isArray(versions) || versions.length === 0 || ',
    to: 'if (!Array.isArray(versions) || ',
  },
  {
    id: 'empty-executable', file: 'src/protocol/provider-executable.ts', tests: ['test/scripts/provider/release.test.ts', ...VALIDATION],
    description: 'an empty provider executable is accepted (the one check every way in calls)',
    from: "if (found.size === 0) return { ok: false, problem: 'empty'",
    to: "if (false) return { ok: false, problem: 'empty'",
  },
  {
    id: 'zip-duplicate-entry', file: 'scripts/lib/provider/archive.ts', tests: ARCHIVE,
    description: 'a zip with the same entry twice is accepted',
    from: 'if (seen.has(name)) throw',
    to: 'if (false) throw',
  },
  {
    id: 'zip-size-unchecked', file: 'scripts/lib/provider/archive.ts', tests: ARCHIVE,
    description: 'an entry whose size differs from its header is accepted',
    from: 'if (size !== entry.uncompressedSize) {',
    to: 'if (false) {',
  },
  {
    id: 'zip-crc-unchecked', file: 'scripts/lib/provider/archive.ts', tests: ARCHIVE,
    description: 'an entry whose CRC-32 does not match is accepted',
    from: 'if (crc32 && crc >>> 0 !== entry.crc32 >>> 0) {',
    to: 'if (false) {',
  },
  {
    id: 'zip-unsafe-name', file: 'scripts/lib/provider/archive.ts', tests: ARCHIVE,
    description: 'unsafe entry names (absolute, ..) are accepted',
    from: 'if (problem !== null) throw',
    to: 'if (false) throw',
  },
  {
    id: 'dead-owner-any-host', file: 'scripts/lib/stores/lease.ts', tests: LEASE,
    description: 'a lease whose pid does not exist here is taken over even when it was taken on another host',
    from: 'if (owner.host !== hostname() || !Number.isInteger(owner.pid)',
    to: 'if (!Number.isInteger(owner.pid)',
  },
  {
    id: 'retry-any-error', file: 'scripts/lib/stores/local.ts', tests: ['test/scripts/stores/local.test.ts'],
    description: 'the local store retries every error (a refusal is repeated 20 times before it is reported)',
    from: 'if (!transient || attempt >= attempts) throw error;',
    to: 'if (attempt >= attempts) throw error;',
  },
  {
    id: 'retry-4xx', file: 'scripts/lib/stores/local.ts', tests: ['test/scripts/stores/local.test.ts'],
    description: 'the local store retries 4xx answers as if they were transient 5xx',
    from: 'const TRANSIENT_LOCAL_ERROR = /\\b5\\d\\d\\b|',
    to: 'const TRANSIENT_LOCAL_ERROR = /\\b[45]\\d\\d\\b|',
  },
  {
    id: 'mirror-download-sha-unchecked', file: 'scripts/lib/mirror/verify.ts', tests: ['test/scripts/mirror/sync.test.ts'],
    description: 'mirror sync does not compare a downloaded archive\'s SHA-256 with the download document\'s shasum',
    from: 'if (downloaded.sha256Hex !== doc.shasum) {',
    to: 'if (false) {',
  },
  {
    id: 'mirror-sums-line-unchecked', file: 'scripts/lib/mirror/verify.ts', tests: ['test/scripts/mirror/sync.test.ts'],
    description: 'mirror sync does not check the archive against the signed SHA256SUMS',
    from: 'checkSumsLine(sums, doc.filename, doc.shasum, doc.shasumsUrl);',
    to: '',
  },
  {
    id: 'mirror-signature-unchecked', file: 'src/protocol/openpgp-signature.ts', tests: ['test/scripts/mirror/sync.test.ts'],
    description: 'mirror sync, pull-through and publish accept any SHA256SUMS signature (the first readable key counts as the signer)',
    from: 'await sig.verified;',
    to: '',
  },
  {
    id: 'stored-entry-size-unchecked', file: 'src/store/uploads/stored-zip.ts', tests: ['test/worker/publish/providers.test.ts'],
    description: 'the publish commit accepts a stored zip entry whose headers record another size than it holds (its h1 would describe bytes Terraform refuses to unpack)',
    from: 'if (entry.method !== 8 && entry.compressedSize !== entry.uncompressedSize) {',
    to: 'if (false) {',
  },
  {
    id: 'deflated-entry-size-unchecked', file: 'src/store/uploads/stored-zip.ts', tests: ['test/worker/publish/providers.test.ts'],
    description: 'the publish commit accepts a deflated zip entry that inflates to another size than its headers record',
    from: '.pipeThrough(new FixedLengthStream(entry.uncompressedSize))',
    to: '',
  },
  {
    id: 'pull-through-bytes-unchecked', file: 'src/mirror/verified-copy.ts', tests: ['test/e2e/mirror-pull.test.ts'],
    description: 'pull-through stores and completes archive bytes that do not match the signed SHA256SUMS line',
    from: 'if (actual !== options.sha256Hex) {',
    to: 'if (false) {',
  },
  {
    id: 'mirror-no-executable', file: 'src/protocol/provider-executable.ts', tests: ['test/scripts/mirror/sync.test.ts'],
    description: 'the provider-executable check (every way in, mirror sync included) takes any top-level file for the executable',
    from: 'const found = entries.find((entry) => !isDirectory(entry) && accepted.test(entry.name));',
    to: 'const found = entries.find((entry) => !isDirectory(entry));',
  },
  {
    id: 'mirror-changed-sums-accepted', file: 'scripts/lib/mirror/sync.ts', tests: ['test/scripts/mirror/sync-changes.test.ts'],
    description: 'mirror sync does not notice that an upstream SHA256SUMS differs from the one it mirrored for that version',
    from: 'if (storedSums?.customMetadata?.sha256 && storedSums.customMetadata.sha256 !== sha256Hex(sums)) {',
    to: 'if (false) {',
  },
  {
    id: 'download-batch-per-request', file: 'src/downloads/count.ts', tests: ['test/worker/downloads/downloads.test.ts'],
    description: 'every counted download registers its own after-response send instead of joining the open batch',
    from: 'if (batchOpen) return; // the open batch carries it',
    to: 'if (false) return;',
  },
  {
    id: 'unverified-refusals-unlimited', file: 'src/routes/publish/refusal-audit.ts', tests: ['test/worker/publish/refusal-flood.test.ts'],
    description: 'every refusal of an unverified CI token writes its own audit entry (forged tokens fill the log)',
    from: 'if (current.written < REFUSALS_PER_WINDOW) {',
    to: 'if (true) {',
  },
  {
    id: 'genuine-unmatched-refusals-unlimited', file: 'src/routes/publish/context.ts', tests: ['test/worker/publish/refusal-flood.test.ts'],
    description: 'refusals of genuine CI tokens that match no publisher are written one by one (anyone can mint one for their own repository)',
    from: 'if (error.claimed && error.claimed.kind === \'ci\') {',
    to: 'if (error.claimed && error.claimed.kind === \'ci\' && !error.verified) {',
  },
  {
    id: 'audit-page-outcome-ignored', file: 'src/store/audit/read.ts', tests: ['test/worker-private/identity/audit-page.test.ts'],
    description: 'the audit page\'s outcome filter is ignored (a flood of refusals hides the successful writes)',
    from: '.filter((e) => query.outcome === undefined || e.outcome === query.outcome)',
    to: '.filter(() => true)',
  },
  // trusted publishing (src/access/): issue 26
  {
    id: 'publisher-ids-not-compared', file: 'src/access/ci-claims.ts', tests: ['test/identity/ci-token.test.ts', 'test/worker/publish/ci-hijack.test.ts'],
    description: 'a publisher pinned to ids matches any repository of the trusted name (a recreated repository publishes)',
    from: 'return presented !== undefined && presented.id === pinned.id && presented.ownerId === pinned.ownerId;',
    to: 'return true;',
  },
  {
    id: 'publisher-owner-id-not-compared', file: 'src/access/ci-claims.ts', tests: ['test/identity/ci-token.test.ts', 'test/worker/publish/ci-hijack.test.ts'],
    description: 'only the repository id is compared (a repository transferred to another owner publishes)',
    from: 'return presented !== undefined && presented.id === pinned.id && presented.ownerId === pinned.ownerId;',
    to: 'return presented !== undefined && presented.id === pinned.id;',
  },
  {
    id: 'legacy-publisher-not-pinned', file: 'src/access/publish-auth.ts', tests: ['test/worker/publish/ci-hijack.test.ts'],
    description: 'a publisher stored before ids existed is never pinned by its first publish (any later repository of that name publishes)',
    from: 'await pinIds(store, config.hostname, namespace, publisher, claims, actor);',
    to: '',
  },
  {
    id: 'publisher-ids-optional', file: 'src/access/publishers.ts', tests: ['test/scripts/publisher.test.ts'],
    description: 'publisher add accepts a GitHub publisher without ids',
    from: "const repositoryId = parseNumericId(input.repositoryId, '--repository-id', 'the repository\\'s id');",
    to: "const repositoryId = input.repositoryId ?? '0';",
  },
  {
    id: 'id-lookup-follows-rename', file: 'scripts/lib/publishers.ts', tests: ['test/scripts/publisher.test.ts'],
    description: 'the id lookup pins the ids of whatever repository a renamed name redirects to',
    from: "if (typeof found === 'string' && found.toLowerCase() !== name.toLowerCase()) {",
    to: 'if (false) {',
  },
  {
    id: 'publisher-workflow-optional', file: 'src/access/publishers.ts', tests: ['test/scripts/publisher.test.ts'],
    description: 'a GitHub publisher without --workflow is accepted (any workflow of the repository publishes)',
    from: "if (input.workflow === undefined) throw new InputError('--workflow FILE.yml is required",
    to: "if (false) throw new InputError('--workflow FILE.yml is required",
  },
  {
    id: 'publisher-ref-optional', file: 'src/access/publishers.ts', tests: ['test/scripts/publisher.test.ts'],
    description: 'a publisher with neither --ref nor --environment is accepted without --any-ref',
    from: 'if (!ref && !environment && !input.anyRef) {',
    to: 'if (false) {',
  },
  {
    id: 'gitlab-unprotected-ref', file: 'src/access/ci-claims.ts', tests: ['test/identity/ci-token.test.ts', 'test/worker/publish/ci-hijack.test.ts'],
    description: 'GitLab tokens of unprotected branches and tags match (any Developer can push one)',
    from: "if (!p.allowUnprotectedRef && claims.ref_protected !== 'true' && claims.ref_protected !== true) return false;",
    to: '',
  },
  {
    id: 'reusable-workflow-any-ref', file: 'src/access/ci-claims.ts', tests: ['test/identity/ci-token.test.ts'],
    description: 'a reusable workflow named with @REF matches at any ref',
    from: "return samePath && (wanted.includes('@') ? ref.slice(at) === workflow.slice(workflow.indexOf('@')) : true);",
    to: 'return samePath;',
  },
  {
    id: 'ci-token-replay', file: 'src/access/publish-auth.ts', tests: ['test/worker/publish/ci-hijack.test.ts'],
    description: 'a CI token that already started a publish may start another (replay)',
    from: 'if (earlier !== null) {',
    to: 'if (false) {',
  },
  {
    id: 'ci-token-use-not-atomic', file: 'src/store/publishers/token-uses.ts', tests: ['test/worker/publish/ci-hijack.test.ts'],
    description: 'the token use is recorded with a plain put (two racing requests both start)',
    from: "onlyIf: { etagDoesNotMatch: '*' } });",
    to: '});',
  },
  {
    id: 'ci-session-jti-not-compared', file: 'src/routes/publish/uploads.ts', tests: ['test/worker/publish/ci-hijack.test.ts'],
    description: 'another token of the same CI job may continue an upload session it did not start',
    from: ' && a.jti === b.jti;',
    to: ';',
  },
  {
    id: 'email-rule-unverified', file: 'src/access/policy.ts', tests: ['test/worker-private/identity/policy.test.ts'],
    description: 'a sign-in rule on email matches an address the provider has not verified',
    from: "if (claim === 'email' && claims.email_verified !== true) return false;",
    to: '',
  },
  {
    id: 'group-session-long', file: 'src/access/policy.ts', tests: ['test/worker-private/identity/policy.test.ts'],
    description: 'a grant from group membership is not marked: its page session lasts 12 h after the person leaves the group',
    from: 'fromGroups ||= namesGroups(rule.if);',
    to: '',
  },
  {
    id: 'group-session-twelve-hours', file: 'src/pages/sign-in.ts', tests: ['test/e2e/sign-in/sign-in.test.ts'],
    description: 'a page session whose scopes come from groups lasts 12 h, not 1 h',
    from: '(grant.fromGroups ? GROUP_SESSION_SECONDS : SESSION_SECONDS)',
    to: '(SESSION_SECONDS)',
  },
  {
    id: 'short-secret-accepted', file: 'src/config.ts', tests: ['test/worker/config.test.ts'],
    description: 'a URL_SIGNING_SECRET or SIGNING_KEY_SECRET shorter than 32 characters is used',
    from: 'if (weak !== null) throw new ConfigError(weak);',
    to: '',
  },
  {
    id: 'deploy-short-secret', file: 'scripts/deploy.ts', tests: ['test/scripts/deploy/deploy-cli.test.ts'],
    description: 'npm run deploy goes ahead with a short secret in the environment',
    from: 'if (weak !== null) throw new InputError(`deploy stopped before changing anything: ${weak}`);',
    to: '',
  },
  {
    id: 'module-proxy-plain-http', file: 'src/mirror/modules/source.ts', tests: ['test/worker/mirror-modules/source.test.ts'],
    description: 'the module proxy stores a package fetched over plain http:// from a host the policy does not name',
    from: "if (parsed.protocol === 'http:' && !namedByPolicy(parsed.hostname)) {",
    to: 'if (false) {',
  },
  {
    id: 'jwks-no-retry', file: 'src/access/jwks-retry.ts', tests: ['test/identity/jwks-retry.test.ts'],
    description: 'a JWKS fetch that loses its connection once fails the sign-in',
    from: 'if (!isJwksTransportFailure(error)) throw error;\n    return verify();',
    to: 'throw error;',
  },
  {
    id: 'ci-token-any-age', file: 'src/access/ci-token.ts', tests: ['test/identity/ci-token.test.ts'],
    description: 'a CI token is accepted however long ago it was issued (as long as its exp allows)',
    from: '      maxTokenAge: MAX_TOKEN_AGE_SECONDS,\n',
    to: '',
  },
  {
    id: 'audit-page-not-admin-only', file: 'src/pages/audit.ts', tests: ['test/worker-private/identity/audit-page.test.ts'],
    description: 'the audit log page is shown to any signed-in person, not only admins',
    from: 'if (!session.person?.admin) return',
    to: 'if (false) return',
  },
  {
    id: 'provider-docs-unknown-keys', file: 'src/protocol/provider-docs.ts', tests: ['test/worker/publish/provider-docs.test.ts'],
    description: 'provider docs sent through the publish API may carry fields the server does not know',
    from: 'if (unknown !== undefined) throw',
    to: 'if (false) throw',
  },
  // the module proxy (src/mirror/modules/, src/routes/module-proxy.ts)
  {
    id: 'module-proxy-branch-head', file: 'src/mirror/modules/source.ts', tests: ['test/worker/mirror-modules/source.test.ts'],
    description: 'a git source without ?ref= (a moving branch head) is proxied',
    from: "if (!ref) refuse('it names no ?ref= (a branch head is not a fixed version)');",
    to: "if (false) refuse('');",
  },
  {
    id: 'module-proxy-readme-html', file: 'src/http/readme.ts', tests: ['test/worker/mirror-modules/repack.test.ts'],
    description: 'a proxied README\'s raw HTML reaches the page unescaped',
    from: 'return reduceHtml(text);',
    to: 'return text;',
  },
  {
    id: 'module-proxy-readme-img-src', file: 'src/http/readme.ts', tests: ['test/worker/mirror-modules/repack.test.ts'],
    description: 'a proxied README\'s own <img> keeps any src (javascript:, protocol-relative)',
    from: "const src = safeUrl(attribute(match[0], 'src') ?? '', 'image');",
    to: "const src = attribute(match[0], 'src');",
  },
  {
    id: 'readme-scheme-allow-list', file: 'src/http/readme.ts', tests: ['test/worker/mirror-modules/repack.test.ts', 'test/worker/publish/module-manifest.test.ts'],
    description: 'a README link or image keeps any scheme the URL parser reads (javascript:, data:, java<TAB>script:)',
    from: "if (!(kind === 'link' ? LINK_SCHEMES : IMAGE_SCHEMES).has(url.protocol)) return null;",
    to: '',
  },
  {
    id: 'readme-url-entities', file: 'src/http/readme.ts', tests: ['test/worker/mirror-modules/repack.test.ts'],
    description: 'a README link target is checked without decoding its entities (jav&#x61;script: kept as a link)',
    from: 'const value = decodeEntities(target).trim();',
    to: 'const value = target.trim();',
  },
  {
    id: 'readme-protocol-relative', file: 'src/http/readme.ts', tests: ['test/worker/mirror-modules/repack.test.ts'],
    description: 'a README link or image to another host without a scheme (//evil, /\\evil) is kept',
    from: 'return absolute ? value : null;',
    to: 'return value;',
  },
  {
    id: 'module-proxy-own-hostname', file: 'src/mirror/modules/proxy.ts', tests: ['test/worker/mirror-modules/own-hostname.test.ts'],
    description: 'a module rule naming our own hostname as the upstream is followed (the Worker fetches itself)',
    from: 'if (!allowance || allowance.upstream.hostname === settings(env).hostname) return null;',
    to: 'if (!allowance) return null;',
  },
  {
    id: 'module-proxy-namespace-twice', file: 'src/protocol/module-policy.ts', tests: ['test/scripts/mirror/module-policy.test.ts'],
    description: 'two module rules may give one of our namespaces different upstreams',
    from: 'if (earlier !== undefined && earlier !== upstream) {',
    to: 'if (false) {',
  },
  {
    id: 'module-proxy-outside-policy', file: 'src/routes/module-proxy.ts', tests: ['test/e2e/module-proxy.test.ts'],
    description: 'a download of a version outside the policy is proxied anyway',
    from: 'if (!proxy.allowance.allows(version)) {',
    to: 'if (false) {',
  },
  {
    id: 'module-proxy-withdrawn-relisted', file: 'src/routes/module-proxy.ts', tests: ['test/e2e/module-proxy.test.ts'],
    description: 'the upstream\'s list brings back a version withdrawn here',
    from: 'const versions = [...new Set([...held, ...(lifecycle ? withoutWithdrawn(upstream, lifecycle, (v) => v) : upstream)])];',
    to: 'const versions = [...new Set([...held, ...upstream])];',
  },
  // provenance (issue 30)
  {
    id: 'provenance-policy-accepts-attestation', file: 'src/store/provenance.ts', tests: ['test/worker/publish/provenance.test.ts'],
    description: 'a namespace requiring build provenance accepts a token publish (a publish attestation is taken for provenance)',
    from: "if (attester.kind === 'build') return;",
    to: "if (attester.kind !== 'none') return;",
  },
  {
    id: 'provenance-policy-late', file: 'src/routes/publish/providers.ts', tests: ['test/worker/publish/provenance.test.ts'],
    description: 'the provider publish API checks the provenance policy only at commit, after the uploads were accepted',
    from: '    await checkProvenancePolicy(store.blobs, address.hostname, namespace, attest);\n',
    to: '',
  },
  {
    id: 'provenance-incomplete-claims-build', file: 'src/provenance/statement.ts', tests: ['test/worker/publish/provenance.test.ts'],
    description: 'a CI token without the commit sha still counts as build provenance',
    from: '  if (missing.length) throw new IncompleteClaimsError(missing);',
    to: '  if (missing.length > 1) throw new IncompleteClaimsError(missing);',
  },
  {
    id: 'dsse-any-payload-type', file: 'src/protocol/dsse.ts', tests: ['test/worker/publish/provenance.test.ts'],
    description: 'an envelope of another payload type is accepted by the verifier',
    from: 'if (e.payloadType !== IN_TOTO_PAYLOAD_TYPE) throw',
    to: 'if (false) throw',
  },
  {
    id: 'verify-any-repository', file: 'scripts/lib/provenance-verify.ts', tests: ['test/e2e/keyless-publish.test.ts'],
    description: 'npm run verify ignores --repository',
    from: 'if (options.repository && facts.repository.toLowerCase() !== options.repository.toLowerCase()) {',
    to: 'if (false) {',
  },
];
