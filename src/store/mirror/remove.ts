import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { InputError } from '../../protocol/errors';
import {
  committedRecordKey,
  downloadDocumentKey,
  mirrorIndexKey,
  mirrorVersionKey,
  providerIndexKey,
  providerPageKey,
  pullManifestKey,
  releaseObjectKey,
  summaryKey,
  versionRecordKey,
  versionsDocumentKey,
} from '../layout';
import { listAllKeys, listAllObjectKeys } from '../list';
import { removeCatalogEntry } from '../pages/catalog';
import { rebuildProviderIndex } from '../providers/write';
import { listVersionRecords, readVersionRecord } from '../providers/version-records';
import type { PublishProgress } from '../records';
import type { Store } from '../store';
import { NotStoredError } from '../errors';

/**
 * Removing a mirrored upstream version (`npm run mirror -- remove`): the
 * operator prunes what nobody needs. Our own hostname's versions are never
 * removed (published versions are immutable: lock files everywhere depend on
 * them — `npm run lifecycle -- withdraw` exists for that). The caller holds
 * the provider's lease (providerLeaseName, as mirror sync does). Order, so
 * that a removal killed at any point leaves the mirror consistent and a
 * re-run completes it:
 *   1. the committed R2 record is deleted: the commit point — from here on
 *      no rebuild lists the version;
 *   2. its KV record, if a state from before R2 records still has one;
 *   3. the provider's index, lists and pages, rebuilt from the records (the version leaves index.json);
 *      with no version left, the index, lists and page are deleted and the catalogue entry removed;
 *   4. last what nothing lists any more: its documents, release files and any
 *      pull-through manifest.
 * With a pull-through policy that allows the version, the Worker may fetch
 * it again from upstream on demand: removal prunes storage, the policy decides
 * what may come back.
 */

export interface RemovedVersion {
  address: string;
  version: string;
  /** 'removed' now, or 'cleaned' (the record was already gone: leftovers of an interrupted removal were deleted). */
  status: 'removed' | 'cleaned';
  /** Release files deleted from R2. */
  files: string[];
  /** Versions still held after the removal. */
  remaining: string[];
}

/**
 * Removes `version` of the mirrored provider `address`. Throws InputError
 * for our own hostname, NotStoredError when the mirror holds nothing of that
 * version (naming the versions it holds); LeaseLostError from `lease.check()`.
 */
export async function removeMirroredVersion(
  store: Store,
  address: ProviderAddress,
  version: string,
  ownHostname: string,
  options: { lease?: { check(): void }; progress?: PublishProgress } = {},
): Promise<RemovedVersion> {
  const { kv, blobs } = store;
  const name = formatAddress(address);
  if (address.hostname === ownHostname) {
    throw new InputError(
      `${name} is published here, not mirrored: published versions are never deleted (lock files everywhere depend on them); ` +
        `to stop offering ${version}, run: npm run lifecycle -- withdraw ${address.namespace}/${address.type} --version ${version} --message "why"`,
    );
  }
  const check = () => options.lease?.check();
  const progress = options.progress ?? (() => {});
  const record = await readVersionRecord(store, address, version);
  const filesPrefix = releaseObjectKey(address, version, '');
  const files = await listAllObjectKeys(blobs, filesPrefix);
  const documentPrefix = downloadDocumentKey(address, version, { os: '', arch: '' }).replace(/_$/, '');
  const documents = await listAllKeys(kv, documentPrefix);
  const leftovers = files.length + documents.length + ((await kv.get(mirrorVersionKey(address, version), 'text')) === null ? 0 : 1);
  if (!record && leftovers === 0) {
    const held = (await listVersionRecords(store, address)).map((r) => r.version).sort();
    throw new NotStoredError(`the mirror holds no ${name} ${version}${held.length ? `; it holds ${held.join(', ')}` : ' (nor any version of it)'}`);
  }

  progress({ step: 'record', detail: `removing ${name} ${version}` });
  check();
  await blobs.delete(committedRecordKey(address, version));
  await kv.delete(versionRecordKey(address, version));

  const remaining = (await listVersionRecords(store, address)).filter((r) => r.version !== version);
  if (remaining.length > 0) {
    await rebuildProviderIndex(store, address, progress, check);
  } else {
    // Nothing left: the provider leaves the mirror, its page and the catalogue.
    check();
    await blobs.delete(providerIndexKey(address));
    for (const key of [mirrorIndexKey(address), versionsDocumentKey(address), providerPageKey(address), summaryKey(address)]) await kv.delete(key);
    await removeCatalogEntry({ kv, blobs }, address, { progress, check });
  }

  check();
  for (const key of documents) await kv.delete(key);
  await kv.delete(mirrorVersionKey(address, version));
  for (const key of files) await blobs.delete(key);
  await blobs.delete(pullManifestKey(address, version));
  return {
    address: name,
    version,
    status: record ? 'removed' : 'cleaned',
    files: files.map((key) => key.slice(filesPrefix.length)),
    remaining: remaining.map((r) => r.version).sort(),
  };
}
