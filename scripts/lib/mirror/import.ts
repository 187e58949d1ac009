import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import {
  formatAddress,
  formatShasums,
  InputError,
  parseJson,
  parseMirrorIndexResponse,
  parseMirrorVersionResponse,
  parsePlatformName,
  parseVersion,
  providerAddress,
  sortVersions,
  zhHash,
  type MirrorVersionResponse,
  type ProviderAddress,
} from '../../../src/protocol/index';
import { shasumsFilename, shasumsSignatureFilename } from '../../../src/protocol/release-files';
import type { Lease } from '../../../src/store/lease';
import { storeMirroredVersion, type MirrorOutcome } from '../../../src/store/mirror/write';
import type { ReleaseFile } from '../../../src/store/providers/write';
import type { PackageRecord, VersionRecord } from '../../../src/store/types';
import type { StoreHandle } from '../stores/handle';
import { diskFile, memoryFile } from '../stores/release-files';
import { combinedStatus, type MirrorSummary, type PlatformSummary, type ProviderSummary, type VersionSummary } from './summary';
import { verifyImported } from './verify';
import { writeUnderProviderLease } from './provider-lease';
import { versionsDocumentRoom, type VersionsDocumentRoom } from '../../../src/store/value-limits';

/**
 * `mirror import DIR`: a directory made by `terraform providers mirror`
 * (the packed layout: HOST/NS/TYPE/index.json, HOST/NS/TYPE/VERSION.json and
 * the zips beside them). Every zip is checked against the `h1:` (and `zh:`
 * where present) hashes of its VERSION.json and must hold the provider
 * executable; a version is stored whole when all its zips verify, exactly as
 * a sync stores it (with a SHA256SUMS made from the zips for auditing; such a
 * directory carries no upstream signature). The unpacked layout
 * (HOST/NS/TYPE/VERSION/OS_ARCH/ with executables) is refused before anything
 * is written.
 */

export interface ImportOptions {
  store: StoreHandle;
  ownHostname: string;
  dryRun?: boolean;
  log?: (line: string) => void;
}

interface FoundProvider {
  address: ProviderAddress;
  dir: string;
}

/** Finds the providers of a packed mirror directory; throws InputError for anything else (nothing is written then). */
export function findPackedProviders(root: string): FoundProvider[] {
  if (!existsSync(root)) throw new InputError(`${root}: no such directory; give the directory \`terraform providers mirror DIR\` wrote`);
  if (!lstatSync(root).isDirectory()) throw new InputError(`${root}: not a directory; give the directory \`terraform providers mirror DIR\` wrote`);
  const found: FoundProvider[] = [];
  const unpacked: string[] = [];
  for (const host of subdirs(root)) {
    for (const namespace of subdirs(join(root, host))) {
      for (const type of subdirs(join(root, host, namespace))) {
        const dir = join(root, host, namespace, type);
        if (existsSync(join(dir, 'index.json'))) {
          let address: ProviderAddress;
          try {
            address = providerAddress(host, namespace, type);
          } catch (error) {
            throw new InputError(`${dir}: ${(error as Error).message}`);
          }
          found.push({ address, dir });
        } else if (subdirs(dir).some((version) => subdirs(join(dir, version)).some((p) => /^[a-z0-9]+_[a-z0-9]+$/.test(p)))) {
          unpacked.push(relative(root, dir));
        }
      }
    }
  }
  if (unpacked.length > 0) {
    throw new InputError(
      `${root} is in the unpacked layout (${unpacked.slice(0, 3).join(', ')}: VERSION/OS_ARCH/ directories holding executables); ` +
        'import expects the packed layout that `terraform providers mirror DIR` writes (HOST/NS/TYPE/index.json, VERSION.json and the zips) — nothing was imported',
    );
  }
  if (found.length === 0) {
    throw new InputError(
      `${root} holds no provider: expected HOST/NAMESPACE/TYPE/index.json as written by \`terraform providers mirror -platform=OS_ARCH ${root}\``,
    );
  }
  return found;
}

/** Imports every provider found under `root`. */
export async function importDirectory(root: string, options: ImportOptions): Promise<MirrorSummary> {
  const log = options.log ?? (() => {});
  const providers: ProviderSummary[] = [];
  for (const provider of findPackedProviders(resolve(root))) providers.push(await importProvider(provider, options, log));
  return { command: 'import', dry_run: !!options.dryRun, ok: providers.every((p) => p.status !== 'failed'), providers };
}

async function importProvider({ address, dir }: FoundProvider, options: ImportOptions, log: (line: string) => void): Promise<ProviderSummary> {
  const name = formatAddress(address);
  if (address.hostname === options.ownHostname) {
    const reason = `${address.hostname} is this registry's own hostname (REGISTRY_HOSTNAME): publish its providers with npm run publish-provider instead`;
    log(`${name}: failed: ${reason}`);
    return { address: name, status: 'failed', reason, versions: [] };
  }
  let versions: string[];
  try {
    const index = parseMirrorIndexResponse(parseJson(readFileSync(join(dir, 'index.json'), 'utf8'), 'index.json'));
    versions = sortVersions(Object.keys(index.versions).map((v) => parseVersion(v)));
  } catch (error) {
    const reason = `${join(dir, 'index.json')}: ${(error as Error).message}`;
    log(`${name}: failed: ${reason}`);
    return { address: name, status: 'failed', reason, versions: [] };
  }
  const results = await writeUnderProviderLease(options.store, address, { command: 'mirror import', dryRun: !!options.dryRun, log }, async (lease) => {
    const done: VersionSummary[] = [];
    // One versions-document room for the provider: the versions this import adds are checked together (1 KV read).
    const room = versionsDocumentRoom(options.store.kv, address);
    for (const version of versions) done.push(await importVersion(address, dir, version, options, log, lease, room));
    return done;
  });
  return { address: name, status: combinedStatus(results.map((v) => v.status)), versions: results };
}

/**
 * Imports one VERSION.json: every archive it lists verified (verifyArchives),
 * then the version stored whole (storeImported), or nothing stored and the
 * version failed with every reason. A dry run verifies and plans. Never
 * throws for the version's failure (it is in the summary).
 */
async function importVersion(
  address: ProviderAddress,
  dir: string,
  version: string,
  options: ImportOptions,
  log: (line: string) => void,
  lease?: Lease,
  room?: VersionsDocumentRoom,
): Promise<VersionSummary> {
  const label = `${formatAddress(address)} ${version}`;
  const documentPath = join(dir, `${version}.json`);
  const platforms: PlatformSummary[] = [];
  const fail = (reason: string): VersionSummary => {
    log(`${label}: NOT imported: ${reason}`);
    return { version, status: 'failed', reason, platforms };
  };
  let archives: MirrorVersionResponse['archives'];
  try {
    archives = parseMirrorVersionResponse(parseJson(readFileSync(documentPath, 'utf8'), `${version}.json`)).archives;
  } catch (error) {
    return fail(`${documentPath}: ${(error as Error).message}`);
  }
  const verified = await verifyArchives({ address, version, dir, documentPath }, archives, platforms);
  if (platforms.length > 0) return fail(notWhole(platforms, verified));
  if (verified.length === 0) return fail(`${documentPath} lists no archives`);
  if (options.dryRun) {
    for (const { pkg } of verified)
      platforms.push({ platform: `${pkg.os}_${pkg.arch}`, status: 'planned', h1: pkg.h1, zh: zhHash(pkg.shasum), size: pkg.size });
    log(`${label}: would import ${verified.map((v) => `${v.pkg.os}_${v.pkg.arch}`).join(', ')} (verified)`);
    return { version, status: 'planned', platforms };
  }
  let outcome: MirrorOutcome;
  try {
    outcome = await storeImported(options.store, address, version, verified, lease, room);
  } catch (error) {
    return fail((error as Error).message);
  }
  for (const { pkg } of verified) {
    platforms.push({
      platform: `${pkg.os}_${pkg.arch}`,
      status: outcome === 'unchanged' ? 'unchanged' : 'mirrored',
      h1: pkg.h1,
      zh: zhHash(pkg.shasum),
      size: pkg.size,
    });
  }
  platforms.sort((a, b) => a.platform.localeCompare(b.platform));
  log(`${label}: ${outcome === 'unchanged' ? 'already held' : 'imported'} ${platforms.map((p) => p.platform).join(', ')}`);
  return { version, status: outcome === 'unchanged' ? 'unchanged' : 'mirrored', platforms };
}

/**
 * Some platform of the version failed (its reasons in `platforms`): the
 * verified ones fail too, as a version is imported whole or not at all.
 * Returns the version's reason: every platform's own failure.
 */
function notWhole(platforms: PlatformSummary[], verified: readonly ImportedArchive[]): string {
  for (const { pkg } of verified)
    platforms.push({
      platform: `${pkg.os}_${pkg.arch}`,
      status: 'failed',
      reason: 'verified, but another platform of this version failed: the version is imported whole or not at all',
    });
  return platforms
    .filter((p) => !p.reason?.startsWith('verified,'))
    .map((p) => p.reason)
    .join('; ');
}

interface ImportedArchive {
  pkg: PackageRecord;
  path: string;
}

/**
 * Verifies each archive VERSION.json lists: its url stays inside `dir` and
 * names a file there, the document gives an h1 for it, and the zip passes
 * verifyImported (the executable, h1, zh). Returns the verified ones; each
 * failure is pushed to `failed` as a failed platform (never thrown).
 */
async function verifyArchives(
  of: { address: ProviderAddress; version: string; dir: string; documentPath: string },
  archives: MirrorVersionResponse['archives'],
  failed: PlatformSummary[],
): Promise<ImportedArchive[]> {
  const { dir, documentPath } = of;
  const verified: ImportedArchive[] = [];
  for (const [key, entry] of Object.entries(archives)) {
    try {
      const platform = parsePlatformName(key);
      const path = resolve(dir, entry.url);
      if (!path.startsWith(dir + sep)) throw new InputError(`${documentPath}: archives.${key}.url ${JSON.stringify(entry.url)} points outside ${dir}`);
      if (!existsSync(path)) throw new InputError(`${documentPath}: archives.${key}.url names ${entry.url}, which is missing`);
      const hashes = entry.hashes ?? [];
      const h1 = hashes.filter((h) => h.startsWith('h1:'));
      const zh = hashes.filter((h) => h.startsWith('zh:'));
      if (h1.length === 0) throw new InputError(`hash check failed: ${documentPath} gives no h1: hash for ${key}, so ${entry.url} cannot be verified`);
      const pkg = await verifyImported(path, { type: of.address.type, version: of.version, platform }, { h1, zh }, documentPath);
      verified.push({ pkg, path });
    } catch (error) {
      failed.push({ platform: key, status: 'failed', reason: (error as Error).message });
    }
  }
  return verified;
}

/**
 * Stores a verified version exactly as a sync stores it, with a SHA256SUMS
 * made from the zips for auditing (no upstream signature: a `terraform
 * providers mirror` directory carries hashes only). Returns
 * storeMirroredVersion's outcome ('unchanged' when held with these bytes; a
 * new version counted against `room`, the import's room for the provider);
 * throws what it throws (VersionConflictError for other bytes).
 */
async function storeImported(
  store: StoreHandle,
  address: ProviderAddress,
  version: string,
  verified: readonly ImportedArchive[],
  lease?: Lease,
  room?: VersionsDocumentRoom,
): Promise<MirrorOutcome> {
  const sums = new TextEncoder().encode(formatShasums(verified.map(({ pkg }) => ({ filename: pkg.filename, sha256Hex: pkg.shasum }))));
  const record: VersionRecord = {
    address,
    version,
    protocols: ['5.0'],
    packages: verified.map((v) => v.pkg),
    shasumsFilename: shasumsFilename(address.type, version),
    shasumsSignatureFilename: shasumsSignatureFilename(address.type, version),
    // A `terraform providers mirror` directory carries hashes, not the upstream signature.
    signingKey: { key_id: '', ascii_armor: '' },
    publishedAt: new Date().toISOString(),
  };
  const files: ReleaseFile[] = [
    ...verified.map(({ pkg, path }) => diskFile(pkg.filename, path, { sha256Hex: pkg.shasum, size: pkg.size }, 'application/zip')),
    memoryFile(record.shasumsFilename, sums, 'text/plain; charset=utf-8'),
  ];
  return storeMirroredVersion(store, record, files, () => {}, lease, room);
}

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}
