import type { Actor } from '../../store/audit/actor';
import { formatAddress } from '../../protocol/address';
import { providerLeaseName } from '../../store/layout';
import { VersionConflictError } from '../../store/errors';
import { beginProviderPublish, publishVersion, type ReleaseFile } from '../../store/providers/write';
import { lostReleaseFiles, recordedReleaseFiles } from '../../store/providers/verify';
import type { VersionRecord } from '../../store/types';
import type { DeclaredFile, ProviderUpload, UploadSession } from '../../store/uploads/session';
import { completeStagedFile, stagedStream } from '../../store/uploads/staged';
import type { Attester } from '../../store/provenance';
import type { PublishStore } from './context';
import { withWorkerLease } from './lease';
import { writeUploadDocs } from './provider-docs';

/**
 * A re-run of a published provider version whose stored release files were lost from R2 (deleted by hand, a lost
 * object): the publish start asks the client to upload exactly those files (an upload session with `repair`), the
 * commit checks each against the version's record and writes it back. Bytes never change: a file is restored only
 * with the SHA-256 and size its record names.
 *
 * A lost signature the registry made (a keyless publish) cannot be restored: the held key would sign again, and an
 * OpenPGP signature carries its creation time, so the new .sig's bytes differ from the recorded SHA-256, which a
 * published version never changes. The start refuses that with 409 naming the fixes (restore the object from a
 * backup, or publish the release as a new version).
 */

/**
 * The manifest's files to upload to restore what R2 lost of `existing` (the same release: the caller compared
 * them), in the record's order; [] when nothing is lost. Throws VersionConflictError (409) naming the file when a
 * lost file is not in the manifest (a registry-made signature) or the manifest declares other bytes for it.
 */
export async function filesToRestore(store: PublishStore, existing: VersionRecord, upload: ProviderUpload): Promise<DeclaredFile[]> {
  const lost = await lostReleaseFiles(store.blobs, existing);
  const declared = new Map(upload.files.map((f) => [f.filename, f]));
  const name = `${formatAddress(existing.address)} ${existing.version}`;
  return lost.map((filename) => {
    const file = declared.get(filename);
    if (!file) {
      throw new VersionConflictError(
        `${name} is published but its stored ${filename} is lost, and this publish does not send it (the registry signed the release): ` +
          'a new signature would not be the bytes the version records (published versions never change). Restore the object from a backup of the bucket, ' +
          'or publish the release as a new version (npm run publish-provider -- --version NEXT …)',
      );
    }
    refuseOtherBytes(existing, file, name);
    return file;
  });
}

/** VersionConflictError (409) unless `file` has the SHA-256 and size the record names for it (a file the record does not name is refused too). */
function refuseOtherBytes(record: VersionRecord, file: DeclaredFile, name: string): void {
  const want = recordedReleaseFiles(record).get(file.filename);
  if (want && (want.sha256 === undefined || want.sha256 === file.sha256) && (want.size === undefined || want.size === file.size)) return;
  throw new VersionConflictError(
    `${name} is published and its ${file.filename} was lost, but this publish sends other bytes for it (SHA-256 ${file.sha256}, ${file.size} bytes; the record says ${want?.sha256 ?? 'no such file'}, ${want?.size ?? '?'} bytes): ` +
      'a lost file is restored only with its recorded bytes (a re-made signature differs); publish the release as a new version instead',
  );
}

/**
 * Commits a repair session: each uploaded file complete with its declared size and SHA-256 (InputError otherwise),
 * then under the provider's lease, the version still committed (409 otherwise: start again) and each file's
 * digest equal to the record's (409 otherwise), src/store's publishVersion of the stored record with these files:
 * it writes back what is missing or differs, completes documents and lists. Returns the record and the outcome
 * ('repaired', or 'unchanged' when another re-run restored them meanwhile).
 */
export async function commitProviderRepair(store: PublishStore, session: UploadSession, actor: Actor, upload: ProviderUpload, attest?: Attester) {
  const { bucket } = store;
  const address = { hostname: session.hostname, namespace: session.namespace, type: upload.type };
  const name = `${formatAddress(address)} ${upload.version}`;
  const staged = await Promise.all(upload.files.map((f) => completeStagedFile(bucket, session, f)));
  const files: ReleaseFile[] = upload.files.map((f, i) => ({
    filename: f.filename,
    sha256Hex: f.sha256,
    size: f.size,
    contentType: f.contentType,
    open: () => stagedStream(bucket, staged[i]!, f.size),
  }));
  return withWorkerLease(store.blobs, providerLeaseName(address), actor, `publish ${name}`, async (lease) => {
    const check = () => lease.check();
    const { existing, lists } = await beginProviderPublish(store, address, upload.version, () => {}, check);
    if (!existing) throw new VersionConflictError(`${name} is no longer published: start the publish again`);
    for (const file of upload.files) refuseOtherBytes(existing, file, name);
    const docs = await writeUploadDocs(store, address, upload, lease);
    const outcome = await publishVersion(store, existing, files, () => {}, { lease, existing, lists, docs, ...(attest ? { attest } : {}) });
    return { existing, outcome };
  });
}
