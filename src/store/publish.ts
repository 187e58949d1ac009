import { formatAddress, type ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import {
  downloadDocument, mirrorIndexDocument, mirrorVersionDocument, versionsDocument,
} from './documents';
import {
  downloadDocumentKey, mirrorIndexKey, mirrorVersionKey, releaseObjectKey, signingKeysKey,
  versionRecordKey, versionRecordPrefix, versionsDocumentKey,
} from './layout';
import type { BlobStore, KvStore, SigningKey, VersionRecord } from './types';
import { rebuildProviderPages } from './pages-publish';

/**
 * The write side of the store, used by the publish and keys scripts (never by
 * the Worker). Order is what keeps the registry consistent: release files
 * first, then the version's immutable documents, then its record, and the
 * provider's lists last. A run killed at any point leaves every list as it
 * was; running it again completes it.
 */

/** A release file to upload: archive, SHA256SUMS or signature. */
export interface ReleaseFile {
  filename: string;
  sha256Hex: string;
  size: number;
  contentType: string;
  /** Opens the bytes; called only when the stored object is missing or differs. */
  open(): ReadableStream | Uint8Array;
}

export interface PublishProgress {
  (event: { step: 'upload' | 'skip-upload' | 'documents' | 'record' | 'index'; detail: string }): void;
}

export type PublishOutcome = 'published' | 'unchanged';

/** The stored record of a version, or null when it was never (completely) published. */
export async function readVersionRecord(kv: KvStore, address: ProviderAddress, version: string): Promise<VersionRecord | null> {
  const text = await kv.get(versionRecordKey(address, version), 'text');
  return text === null ? null : (JSON.parse(text) as VersionRecord);
}

/** Every stored version record of a provider (follows KV list cursors). */
export async function listVersionRecords(kv: KvStore, address: ProviderAddress): Promise<VersionRecord[]> {
  const names = await listKeys(kv, versionRecordPrefix(address));
  const texts = await mapLimit(names, 16, (name) => kv.get(name, 'text'));
  return texts.filter((t): t is string => t !== null).map((t) => JSON.parse(t) as VersionRecord);
}

/**
 * True when two records describe the same bytes (same files and hashes, same
 * protocols): a re-run of the same release.
 */
export function sameRelease(a: VersionRecord, b: VersionRecord): boolean {
  const files = (r: VersionRecord) =>
    JSON.stringify([...r.packages].sort((x, y) => x.filename.localeCompare(y.filename)).map((p) => [p.filename, p.shasum, p.size]));
  return files(a) === files(b) && JSON.stringify(a.protocols) === JSON.stringify(b.protocols);
}

/**
 * Publishes one version. When the version is already published with the same
 * bytes it rewrites nothing (but completes the provider lists if an earlier
 * run stopped before them) and returns 'unchanged'. When it is published with
 * different bytes it throws InputError: published versions are immutable.
 */
export async function publishVersion(
  kv: KvStore,
  blobs: BlobStore,
  record: VersionRecord,
  files: readonly ReleaseFile[],
  progress: PublishProgress = () => {},
  options: { rebuildIndex?: boolean } = {},
): Promise<PublishOutcome> {
  const { address, version } = record;
  const rebuild = options.rebuildIndex ?? true;
  const existing = await readVersionRecord(kv, address, version);
  if (existing) {
    if (!sameRelease(existing, record)) {
      throw new InputError(
        `${formatAddress(address)} ${version} is already published with different contents; published versions are immutable — publish a new version instead`,
        409,
      );
    }
    if (rebuild) await rebuildProviderIndex(kv, address, progress);
    return 'unchanged';
  }

  for (const file of files) {
    const key = releaseObjectKey(address, version, file.filename);
    const head = await blobs.head(key);
    if (head && head.size === file.size && head.customMetadata?.sha256 === file.sha256Hex) {
      progress({ step: 'skip-upload', detail: file.filename });
      continue;
    }
    progress({ step: 'upload', detail: file.filename });
    await blobs.put(key, file.open(), {
      httpMetadata: { contentType: file.contentType },
      customMetadata: { sha256: file.sha256Hex },
    });
  }

  progress({ step: 'documents', detail: `${record.packages.length} download documents and the mirror document` });
  for (const pkg of record.packages) {
    await kv.put(downloadDocumentKey(address, version, pkg), downloadDocument(record, pkg));
  }
  await kv.put(mirrorVersionKey(address, version), mirrorVersionDocument(record));

  progress({ step: 'record', detail: version });
  await kv.put(versionRecordKey(address, version), JSON.stringify(record));

  if (rebuild) await rebuildProviderIndex(kv, address, progress);
  return 'published';
}

/**
 * Publishes several versions of one provider (an import, a backfill) and
 * rebuilds its lists once at the end instead of after every version. Same
 * guarantees per version as publishVersion.
 */
export async function publishVersions(
  kv: KvStore,
  blobs: BlobStore,
  releases: readonly { record: VersionRecord; files: readonly ReleaseFile[] }[],
  progress: PublishProgress = () => {},
): Promise<PublishOutcome[]> {
  const outcomes: PublishOutcome[] = [];
  for (const { record, files } of releases) {
    outcomes.push(await publishVersion(kv, blobs, record, files, progress, { rebuildIndex: false }));
  }
  const addresses = new Map(releases.map(({ record }) => [formatAddress(record.address), record.address]));
  for (const address of addresses.values()) await rebuildProviderIndex(kv, address, progress);
  return outcomes;
}

/**
 * Rewrites the provider's version lists (registry and mirror) from the
 * stored version records. KV has no compare-and-swap, so after writing it
 * lists the records again and repeats until what it wrote matches what is
 * stored: of two concurrent publishers, the one that writes last has seen
 * both records. Writes nothing when the lists are already current.
 */
export async function rebuildProviderIndex(kv: KvStore, address: ProviderAddress, progress: PublishProgress = () => {}): Promise<void> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const records = await listVersionRecords(kv, address);
    const versions = versionsDocument(records);
    const mirror = mirrorIndexDocument(records);
    const [storedVersions, storedMirror] = await Promise.all([
      kv.get(versionsDocumentKey(address), 'text'),
      kv.get(mirrorIndexKey(address), 'text'),
    ]);
    if (storedVersions === versions && storedMirror === mirror) {
      await rebuildProviderPages(kv, address, records);
      return;
    }
    progress({ step: 'index', detail: `${records.length} versions of ${formatAddress(address)}` });
    await kv.put(mirrorIndexKey(address), mirror);
    await kv.put(versionsDocumentKey(address), versions);
  }
  throw new Error(`the version lists of ${formatAddress(address)} kept changing while being rebuilt; run the publish again`);
}

/** The namespace's public signing keys, oldest first. */
export async function readSigningKeys(kv: KvStore, hostname: string, namespace: string): Promise<SigningKey[]> {
  const text = await kv.get(signingKeysKey(hostname, namespace), 'text');
  return text === null ? [] : (JSON.parse(text) as SigningKey[]);
}

export async function writeSigningKeys(kv: KvStore, hostname: string, namespace: string, keys: readonly SigningKey[]): Promise<void> {
  await kv.put(signingKeysKey(hostname, namespace), JSON.stringify(keys));
}

async function listKeys(kv: KvStore, prefix: string): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await kv.list({ prefix, cursor });
    names.push(...page.keys.map((k) => k.name));
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  return names;
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  });
  await Promise.all(workers);
  return results;
}
