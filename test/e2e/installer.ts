import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { tmpdir } from 'node:os';
import yauzl from 'yauzl';
import { newestMatching, parseConstraints } from '../../src/protocol/constraints';
import { h1Hash, parseShasums } from '../../src/protocol/hashes';
import { parseServiceDiscovery } from '../../src/protocol/discovery';
import { parseMirrorIndexResponse, parseMirrorVersionResponse } from '../../src/protocol/mirror';
import { parseProviderPackageResponse, parseProviderVersionsResponse, type GpgPublicKey } from '../../src/protocol/providers-v1';
import { RELEASE_FILE_PREFIX } from '../../src/protocol/release-files';
import { getBytes, getJson, type HttpOptions } from './http';

/**
 * A provider installer client that follows the steps of Terraform's and
 * OpenTofu's installers (internal/getproviders), with the same checks, so
 * that the e2e test fails where `terraform init` would:
 *
 * origin registry: discovery → providers.v1 (relative to the discovery
 * document) → versions → newest meeting the constraints → download document
 * (os/arch echo the request, shasum is 64 hex) → archive (SHA-256 = shasum)
 * → SHA256SUMS (the line for `filename` has that hash) → detached signature
 * verified by GnuPG with the served ascii_armor keys → unzip → h1 of the
 * unpacked files = the h1 the registry reports.
 *
 * network mirror: index.json → VERSION.json → archive (relative to the
 * VERSION.json URL) → unzip → h1 = one of the reported hashes.
 *
 * Both end by producing a .terraform.lock.hcl provider block.
 */

export interface ProviderSource {
  hostname: string;
  namespace: string;
  type: string;
}

export interface InstallRequest {
  source: ProviderSource;
  constraints: string;
  os: string;
  arch: string;
  /** Where packages are unpacked: DIR/HOST/NS/TYPE/VERSION/OS_ARCH, like .terraform/providers. */
  installDir: string;
  http?: HttpOptions;
}

export interface Installed {
  version: string;
  packageDir: string;
  executable: string;
  /** The h1 recomputed from the unpacked files. */
  h1: string;
  /** Every hash for the lock file (zh and h1 of every platform), sorted as Terraform writes them. */
  hashes: string[];
  /** For the registry: the key id GnuPG reported for the good signature. */
  signedBy?: string;
  lockBlock: string;
}

/** Installs from an origin registry found by service discovery at `origin` (scheme://host[:port]). */
export async function installFromRegistry(origin: string, request: InstallRequest): Promise<Installed> {
  const { source, os, arch } = request;
  const discoveryUrl = new URL('/.well-known/terraform.json', origin).href;
  const services = parseServiceDiscovery((await getJson<unknown>(discoveryUrl, request.http)).json);
  const advertised = services['providers.v1'];
  if (advertised === undefined) throw new Error(`${discoveryUrl} does not advertise providers.v1`);
  const base = new URL(advertised, discoveryUrl);
  if (!base.pathname.endsWith('/')) base.pathname += '/';

  const versionsUrl = new URL(`${source.namespace}/${source.type}/versions`, base).href;
  const listing = parseProviderVersionsResponse((await getJson<unknown>(versionsUrl, request.http)).json);
  const version = newestMatching(
    listing.versions.map((v) => v.version),
    parseConstraints(request.constraints),
  );
  if (version === null) throw new Error(`no version of ${address(source)} meets "${request.constraints}"`);
  const entry = listing.versions.find((v) => v.version === version)!;
  if (!(entry.protocols ?? []).some((p) => /^[56](\.|$)/.test(p))) throw new Error(`${version} speaks protocols ${entry.protocols}, not 5 or 6`);
  if (!(entry.platforms ?? []).some((p) => p.os === os && p.arch === arch)) throw new Error(`${version} lists no ${os}_${arch} package`);

  const downloadUrl = new URL(`${source.namespace}/${source.type}/${version}/download/${os}/${arch}`, base).href;
  const meta = parseProviderPackageResponse((await getJson<unknown>(downloadUrl, request.http)).json);
  if (meta.os !== os || meta.arch !== arch) throw new Error(`download document answers for ${meta.os}_${meta.arch}, asked for ${os}_${arch}`);
  if (!/^[0-9a-f]{64}$/.test(meta.shasum)) throw new Error(`shasum ${JSON.stringify(meta.shasum)} is not 64 hex digits`);
  // Every URL in the document is resolved against the document's own URL.
  const archiveUrl = new URL(meta.download_url, downloadUrl).href;
  const sumsUrl = new URL(meta.shasums_url, downloadUrl).href;
  const signatureUrl = new URL(meta.shasums_signature_url, downloadUrl).href;

  const archive = await getBytes(archiveUrl, request.http);
  const archiveSha = sha256Hex(archive);
  if (archiveSha !== meta.shasum) throw new Error(`archive SHA-256 ${archiveSha} ≠ shasum ${meta.shasum}`);

  const sums = await getBytes(sumsUrl, request.http);
  const sumsEntries = parseShasums(sums.toString('utf8'));
  const line = sumsEntries.find((e) => e.filename === meta.filename);
  if (!line) throw new Error(`SHA256SUMS has no line for ${meta.filename}`);
  if (line.sha256Hex !== meta.shasum) throw new Error(`SHA256SUMS says ${line.sha256Hex} for ${meta.filename}, the registry says ${meta.shasum}`);

  const signature = await getBytes(signatureUrl, request.http);
  const signedBy = await gpgVerify(sums, signature, meta.signing_keys.gpg_public_keys);

  const packageDir = join(request.installDir, source.hostname, source.namespace, source.type, version, `${os}_${arch}`);
  const executable = await unpack(archive, packageDir, source.type);
  const h1 = h1Hash(await dirDigests(packageDir));

  // OpenTofu's `packages`: zh and h1 of every platform of this version.
  const packages = meta.packages ?? {};
  const ours = packages[`${os}_${arch}`];
  if (!ours) throw new Error(`packages has no entry for ${os}_${arch}`);
  if (!ours.hashes.includes(h1)) throw new Error(`unpacked h1 ${h1} is not among the reported hashes ${ours.hashes.join(', ')}`);
  if (!ours.hashes.includes(`zh:${meta.shasum}`)) throw new Error(`packages lacks zh:${meta.shasum}`);
  // The zh hashes are authenticated by the signed SHA256SUMS: every platform's must appear there.
  const signedZh = new Set(sumsEntries.map((e) => `zh:${e.sha256Hex}`));
  const hashes = new Set<string>([h1, `zh:${meta.shasum}`]);
  for (const [platform, { hashes: reported }] of Object.entries(packages)) {
    const zh = reported.filter((h) => h.startsWith('zh:'));
    const h1s = reported.filter((h) => h.startsWith('h1:'));
    if (zh.length !== 1 || h1s.length !== 1) throw new Error(`packages.${platform} must carry one zh and one h1, has ${reported.join(', ')}`);
    if (!signedZh.has(zh[0]!)) throw new Error(`packages.${platform} ${zh[0]} is not in the signed SHA256SUMS`);
    for (const hash of reported) hashes.add(hash);
  }
  const sorted = [...hashes].sort();
  return { version, packageDir, executable, h1, hashes: sorted, signedBy, lockBlock: lockBlock(source, version, request.constraints, sorted) };
}

/** Installs through a network mirror whose base URL is `mirrorBase` (ends with "/"). */
export async function installFromMirror(mirrorBase: string, request: InstallRequest): Promise<Installed> {
  const { source, os, arch } = request;
  // "./" keeps a hostname with a port ("localhost:8443/…") from reading as a URL scheme.
  const providerBase = new URL(`./${source.hostname}/${source.namespace}/${source.type}/`, mirrorBase);
  const indexUrl = new URL('index.json', providerBase).href;
  const index = parseMirrorIndexResponse((await getJson<unknown>(indexUrl, request.http)).json);
  const version = newestMatching(Object.keys(index.versions), parseConstraints(request.constraints));
  if (version === null) throw new Error(`no version of ${address(source)} in the mirror meets "${request.constraints}"`);

  const versionUrl = new URL(`${version}.json`, providerBase).href;
  const packages = parseMirrorVersionResponse((await getJson<unknown>(versionUrl, request.http)).json);
  const ours = packages.archives[`${os}_${arch}`];
  if (!ours) throw new Error(`the mirror has no ${os}_${arch} package of ${version}`);
  const archive = await getBytes(new URL(ours.url, versionUrl).href, request.http);

  const packageDir = join(request.installDir, source.hostname, source.namespace, source.type, version, `${os}_${arch}`);
  const executable = await unpack(archive, packageDir, source.type);
  const h1 = h1Hash(await dirDigests(packageDir));
  const reported = ours.hashes ?? [];
  // Terraform verifies the strongest hash it understands: h1 when present.
  if (!reported.includes(h1)) throw new Error(`unpacked h1 ${h1} is not among the mirror's hashes ${reported.join(', ')}`);
  const zh = reported.find((h) => h.startsWith('zh:'));
  if (zh && zh !== `zh:${sha256Hex(archive)}`) throw new Error(`archive SHA-256 does not match the mirror's ${zh}`);

  const hashes = new Set<string>([h1]);
  for (const [platform, entry] of Object.entries(packages.archives)) {
    const list = entry.hashes ?? [];
    if (!list.some((h) => h.startsWith('h1:')) || !list.some((h) => h.startsWith('zh:'))) {
      throw new Error(`mirror archives.${platform} must carry an h1 and a zh hash, has ${list.join(', ')}`);
    }
    for (const hash of list) hashes.add(hash);
  }
  const sorted = [...hashes].sort();
  return { version, packageDir, executable, h1, hashes: sorted, lockBlock: lockBlock(source, version, request.constraints, sorted) };
}

/** A provider block as `terraform init` writes it into .terraform.lock.hcl. */
export function lockBlock(source: ProviderSource, version: string, constraints: string, hashes: readonly string[]): string {
  return [
    `provider "${address(source)}" {`,
    `  version     = "${version}"`,
    ...(constraints.trim() === '' ? [] : [`  constraints = "${constraints}"`]),
    '  hashes = [',
    ...hashes.map((hash) => `    "${hash}",`),
    '  ]',
    '}',
    '',
  ].join('\n');
}

/** Parses the provider blocks of a .terraform.lock.hcl (just enough for the tests). */
export function parseLockFile(text: string): Map<string, { version: string; constraints?: string; hashes: string[] }> {
  const blocks = new Map<string, { version: string; constraints?: string; hashes: string[] }>();
  for (const match of text.matchAll(/provider "([^"]+)" \{([\s\S]*?)\n\}/g)) {
    const body = match[2]!;
    blocks.set(match[1]!, {
      version: /version\s*=\s*"([^"]+)"/.exec(body)?.[1] ?? '',
      constraints: /constraints\s*=\s*"([^"]+)"/.exec(body)?.[1],
      hashes: [...body.matchAll(/"((?:h1|zh):[^"]+)"/g)].map((m) => m[1]!),
    });
  }
  return blocks;
}

function address(source: ProviderSource): string {
  return `${source.hostname}/${source.namespace}/${source.type}`;
}

function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Verifies the detached signature over SHA256SUMS with GnuPG in a throwaway
 * home holding only the served keys. Returns the long key id of the signer,
 * which must be one of the served key_ids.
 */
async function gpgVerify(sums: Buffer, signature: Buffer, keys: readonly GpgPublicKey[]): Promise<string> {
  if (keys.length === 0) throw new Error('signing_keys.gpg_public_keys is empty');
  const home = await mkdtemp(join(tmpdir(), 'gnupg-'));
  await chmod(home, 0o700);
  try {
    const gpg = (args: string[]) =>
      execFileSync('gpg', ['--homedir', home, '--batch', '--no-tty', '--no-auto-key-retrieve', ...args], { stdio: 'pipe' }).toString();
    for (const [index, key] of keys.entries()) {
      const path = join(home, `key${index}.asc`);
      await writeFile(path, key.ascii_armor);
      gpg(['--import', path]);
    }
    await writeFile(join(home, 'SHA256SUMS'), sums);
    await writeFile(join(home, 'SHA256SUMS.sig'), signature);
    let status: string;
    try {
      status = gpg(['--status-fd', '1', '--verify', join(home, 'SHA256SUMS.sig'), join(home, 'SHA256SUMS')]);
    } catch (error) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? String(error);
      throw new Error(`gpg --verify failed: ${stderr}`);
    }
    // [GNUPG:] VALIDSIG <fingerprint> … ; the long key id is the fingerprint's last 16 digits.
    const fingerprint = /^\[GNUPG:\] VALIDSIG ([0-9A-F]{40})/m.exec(status)?.[1];
    if (!fingerprint || !/^\[GNUPG:\] GOODSIG /m.test(status)) throw new Error(`gpg did not report a good signature:\n${status}`);
    const keyId = fingerprint.slice(-16);
    if (!keys.some((k) => k.key_id.toUpperCase() === keyId)) throw new Error(`signed by ${keyId}, not one of the served key_ids`);
    return keyId;
  } finally {
    try {
      execFileSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
    } catch {
      // no agent was started
    }
    await rm(home, { recursive: true, force: true });
  }
}

/**
 * Unzips into `dir` (replacing it), refusing entries that would escape it,
 * and returns the path of the provider executable, which Terraform looks for
 * as terraform-provider-TYPE* at the top of the package.
 */
async function unpack(zip: Buffer, dir: string, type: string): Promise<string> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const entries = await readZip(zip);
  for (const entry of entries) {
    const target = join(dir, entry.name);
    if (relative(dir, target).startsWith('..')) throw new Error(`zip entry ${entry.name} escapes the package directory`);
    if (entry.name.endsWith('/')) {
      await mkdir(target, { recursive: true });
      continue;
    }
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, entry.data, { mode: entry.mode & 0o777 || 0o644 });
  }
  const executable = entries.find((e) => !e.name.includes('/') && e.name.startsWith(`${RELEASE_FILE_PREFIX}${type}`));
  if (!executable) throw new Error(`the package has no ${RELEASE_FILE_PREFIX}${type}* executable`);
  return join(dir, executable.name);
}

function readZip(zip: Buffer): Promise<{ name: string; data: Buffer; mode: number }[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true }, (error, archive) => {
      if (error || !archive) return reject(error ?? new Error('unreadable zip'));
      const out: { name: string; data: Buffer; mode: number }[] = [];
      archive.on('entry', (entry: yauzl.Entry) => {
        const mode = (entry.externalFileAttributes >>> 16) & 0o7777;
        if (entry.fileName.endsWith('/')) {
          out.push({ name: entry.fileName, data: Buffer.alloc(0), mode });
          return archive.readEntry();
        }
        archive.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError ?? new Error(`cannot read ${entry.fileName}`));
          const chunks: Buffer[] = [];
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('end', () => {
            out.push({ name: entry.fileName, data: Buffer.concat(chunks), mode });
            archive.readEntry();
          });
          stream.on('error', reject);
        });
      });
      archive.on('end', () => resolve(out));
      archive.on('error', reject);
      archive.readEntry();
    });
  });
}

/** Name (relative, "/"-separated) and SHA-256 of every file under `dir`, as Go's dirhash.HashDir sees them. */
async function dirDigests(dir: string): Promise<{ name: string; sha256Hex: string }[]> {
  const out: { name: string; sha256Hex: string }[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.push({ name: relative(dir, path).split(sep).join('/'), sha256Hex: sha256Hex(await readFile(path)) });
  }
  return out;
}
