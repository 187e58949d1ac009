import { env } from 'cloudflare:workers';
import * as openpgp from 'openpgp';
import { expect, inject } from 'vitest';
import { newToken, tokenId, tokenSha256 } from '../../../src/access/tokens';
import { formatShasums, h1Hash } from '../../../src/protocol/hashes';
import { archiveFilename, executableName, manifestFilename, shasumsFilename, shasumsSignatureFilename } from '../../../src/protocol/release-files';
import { writeSigningKeys } from '../../../src/store/providers/signing-keys';
import { writeTokenRecord } from '../../../src/store/tokens/write';
import { TEST_KEY } from '../../fixtures/release';
import { zipStored } from '../../fixtures/archives';
import { get } from '../helpers';

/**
 * Helpers of the publish API tests: tokens as `npm run token -- create` stores them, real zips and a SHA256SUMS
 * signed by the run's fixture key, and a client doing what the CLI's --registry does (manifest, PUT, commit).
 * Expected hashes are computed with WebCrypto here, not by the code under test.
 */

export const HOST = env.REGISTRY_HOSTNAME;

/**
 * A token as `npm run token -- create` stores it. Publish scopes that name packages (NS/TYPE, NS/NAME/SYSTEM) are
 * stored as `--publish PACKAGE` stores them; bare namespaces as `--publish NS --namespace-wide` does, unless
 * `legacy` (a publish token created before per-package rights: namespaces, no packages, no namespace-wide flag).
 */
export async function issue(purpose: 'read' | 'publish', scopes: string[], options: { expires?: string | null; name?: string; legacy?: boolean } = {}) {
  const token = newToken();
  const sha256 = tokenSha256(token);
  const packages = purpose === 'publish' && scopes.every((s) => s.includes('/')) ? scopes : null;
  await writeTokenRecord(env.REGISTRY_KV, {
    id: tokenId(sha256),
    name: options.name ?? `${purpose}-test`,
    sha256,
    scopes: packages ? [...new Set(packages.map((p) => p.split('/')[0]!))] : scopes,
    created: new Date().toISOString(),
    expires: options.expires ?? null,
    purpose,
    ...(packages ? { packages } : purpose === 'publish' && !options.legacy ? { namespaceWide: true as const } : {}),
  });
  return { token, id: tokenId(sha256) };
}

export async function registerFixtureKey(namespace: string): Promise<void> {
  await writeSigningKeys(env.REGISTRY_KV, HOST, namespace, [TEST_KEY]);
}

export async function hex(bytes: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

export interface BuiltRelease {
  type: string;
  version: string;
  files: Map<string, Uint8Array>;
  /** Expected h1 per archive, from WebCrypto over the entries as built. */
  h1: Map<string, string>;
}

let privateKey: Promise<openpgp.PrivateKey> | undefined;

/** A release of real zips: each holds the executable (or `executable(platform)`), a signed SHA256SUMS. */
export async function buildRelease(
  type: string,
  version: string,
  options: {
    platforms?: string[];
    salt?: string;
    executable?: (platform: string) => string;
    unsigned?: boolean;
    sums?: (text: string) => string;
    /** Builds the zip of a platform instead of zipStored (entries: name → content). */
    zip?: (platform: string, entries: Record<string, string>) => Promise<Uint8Array>;
    /** goreleaser's manifest (terraform-registry-manifest.json's text): listed in SHA256SUMS (checksum.extra_files) and sent as …_manifest.json. */
    manifest?: string;
  } = {},
): Promise<BuiltRelease> {
  const files = new Map<string, Uint8Array>();
  const h1 = new Map<string, string>();
  const lines: { filename: string; sha256Hex: string }[] = [];
  for (const platform of options.platforms ?? ['linux_amd64', 'darwin_arm64', 'windows_amd64']) {
    const [os, arch] = platform.split('_') as [string, string];
    const exe = options.executable?.(platform) ?? executableName(type, version, { os });
    const entries = { [exe]: `#!/bin/sh\necho ${type} ${version} ${platform} ${options.salt ?? ''}\n`, 'README.md': `# ${type}\n` };
    const zip = options.zip ? await options.zip(platform, entries) : zipStored(entries);
    const filename = archiveFilename(type, version, { os, arch });
    files.set(filename, zip);
    const digests = await Promise.all(
      Object.entries(entries).map(async ([name, content]) => ({ name, sha256Hex: await hex(new TextEncoder().encode(content)) })),
    );
    h1.set(filename, h1Hash(digests));
    lines.push({ filename, sha256Hex: await hex(zip) });
  }
  if (options.manifest !== undefined) {
    const bytes = new TextEncoder().encode(options.manifest);
    files.set(manifestFilename(type, version), bytes);
    lines.push({ filename: manifestFilename(type, version), sha256Hex: await hex(bytes) });
    lines.sort((a, b) => (a.filename < b.filename ? -1 : 1));
  }
  const text = formatShasums(lines);
  const sums = new TextEncoder().encode(options.sums ? options.sums(text) : text);
  files.set(shasumsFilename(type, version), sums);
  if (!options.unsigned) {
    privateKey ??= openpgp.readPrivateKey({ armoredKey: inject('fixtureSigningKey').armoredPrivateKey });
    const signature = await openpgp.sign({
      message: await openpgp.createMessage({ binary: sums }),
      signingKeys: await privateKey,
      detached: true,
      format: 'binary',
    });
    files.set(shasumsSignatureFilename(type, version), signature);
  }
  return { type, version, files, h1 };
}

export const bearer = (token: string | null, extra: Record<string, string> = {}): Record<string, string> =>
  token === null ? extra : { authorization: `Bearer ${token}`, ...extra };

export async function manifestOf(release: BuiltRelease, extra: object = {}) {
  return {
    protocols: ['6.0'],
    files: await Promise.all([...release.files].map(async ([filename, bytes]) => ({ filename, size: bytes.byteLength, sha256: await hex(bytes) }))),
    ...extra,
  };
}

export function startPublish(token: string | null, namespace: string, release: BuiltRelease, manifest: object): Promise<Response> {
  return get(`/v1/publish/providers/${namespace}/${release.type}/${release.version}`, {
    method: 'POST',
    headers: bearer(token, { 'content-type': 'application/json' }),
    body: JSON.stringify(manifest),
  });
}

export interface Session {
  upload: string;
  files: { filename: string; url: string; size: number; parts: number }[];
  commit_url: string;
}

export function put(token: string | null, url: string, bytes: Uint8Array): Promise<Response> {
  return get(url, { method: 'PUT', headers: bearer(token, { 'content-length': String(bytes.byteLength) }), body: bytes });
}

export function commit(token: string | null, session: Session): Promise<Response> {
  return get(session.commit_url, { method: 'POST', headers: bearer(token) });
}

/** Starts, uploads every file and commits; returns each step's response (stops at the first failure). */
export async function publishRelease(token: string, namespace: string, release: BuiltRelease, manifestExtra: object = {}) {
  const started = await startPublish(token, namespace, release, await manifestOf(release, manifestExtra));
  if (started.status !== 201) return { started, body: (await started.json()) as Record<string, unknown> };
  const session = (await started.json()) as Session;
  for (const file of session.files) {
    const uploaded = await put(token, file.url, release.files.get(file.filename)!);
    if (uploaded.status !== 200) return { started, uploaded, body: (await uploaded.json()) as Record<string, unknown> };
  }
  const committed = await commit(token, session);
  return { started, committed, session, body: (await committed.json()) as Record<string, unknown> };
}

const EMPTY_MODULE_DOCS = { inputs: [], outputs: [], providers: [], requiredVersion: null, submodules: [] };

/**
 * Publishes `bytes` (a module package of `format`) as NS/NAME/aws 1.0.0 over the API — manifest, one PUT,
 * commit — as a client would; the commit's status and errors, and whether the version is listed after it.
 */
export async function publishModulePackage(
  token: string,
  namespace: string,
  name: string,
  format: 'zip' | 'tar.gz',
  bytes: Uint8Array,
): Promise<{ status: number; errors: string[]; listed: boolean }> {
  const started = await get(`/v1/publish/modules/${namespace}/${name}/aws/1.0.0`, {
    method: 'POST',
    headers: bearer(token, { 'content-type': 'application/json' }),
    body: JSON.stringify({ format, size: bytes.byteLength, sha256: await hex(bytes), docs: EMPTY_MODULE_DOCS }),
  });
  expect(started.status, await started.clone().text()).toBe(201);
  const session = (await started.json()) as Session;
  expect((await put(token, session.files[0]!.url, bytes)).status).toBe(200);
  const committed = await get(session.commit_url, { method: 'POST', headers: bearer(token) });
  const body = (await committed.json()) as { errors?: string[] };
  const versions = await get(`/v1/modules/${namespace}/${name}/aws/versions`, { headers: bearer(token) });
  const listed = versions.status === 200 && JSON.stringify(await versions.json()).includes('1.0.0');
  return { status: committed.status, errors: body.errors ?? [], listed };
}
