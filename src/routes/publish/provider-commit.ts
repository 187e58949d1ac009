import type { Actor } from '../../store/audit/actor';
import { formatAddress } from '../../protocol/address';
import { sha256Hex } from '../../protocol/hashes';
import { verifyDetached } from '../../protocol/openpgp-signature';
import { parseReleaseFilename } from '../../protocol/release-files';
import { checkProviderRelease } from '../../protocol/provider-release';
import { readZipDirectory, zipH1 } from '../../protocol/zip-reader';
import { providerLeaseName } from '../../store/layout';
import { beginProviderPublish, publishVersion, type ReleaseFile } from '../../store/providers/write';
import { writeUploadDocs } from './provider-docs';
import { differentContentsError, sameRelease } from '../../store/providers/version-records';
import { readSigningKeys } from '../../store/providers/signing-keys';
import type { SigningKey, VersionRecord } from '../../store/types';
import type { ProviderUpload, UploadSession } from '../../store/uploads/session';
import { completeStagedFile, partCount, readStagedFile, stagedStream } from '../../store/uploads/staged';
import { uploadFileKey } from '../../store/layout';
import { inlineBytes } from './manifest';
import { heldRangeReader, storedZip } from '../../store/uploads/stored-zip';
import type { PublishStore } from './context';
import { checkProvenancePolicy, type Attester } from '../../store/provenance';
import { withWorkerLease } from './lease';
import { allSettledInOrder } from '../../concurrency';
import { draftRecord, publishResult } from './providers';
import { signerFor } from './signing';
import { commitProviderRepair } from './provider-repair';

/**
 * Commits a provider upload: every file complete with its declared size and
 * SHA-256, then the one release pipeline the CLI runs too
 * (src/protocol/provider-release.ts: each zip readable and holding
 * terraform-provider-TYPE_vVERSION, read from memory for a small file sent
 * whole, by range otherwise; its `h1:` computed here and equal to the client's
 * when sent; the manifest's protocols; SHA256SUMS listing exactly the archives
 * and the manifest's line), the signature verifying
 * with a key of the namespace (or made now by the registry-held key) — then
 * publishes with src/store's publishVersion under the provider's lease:
 * release files written from the held bytes or copied from the staging area, documents, the R2 record (the
 * commit point), the lists. Throws InputError (400) or VersionConflictError
 * (409: the version was published meanwhile with other bytes) with nothing
 * written, docs included. A repair session (`upload.repair`) is committed by
 * provider-repair.ts's commitProviderRepair instead.
 */
export async function commitProvider(
  store: PublishStore,
  session: UploadSession,
  actor: Actor,
  upload: ProviderUpload,
  signingKeySecret: string,
  attest?: Attester,
) {
  if (upload.repair) {
    // A re-run restoring lost release files of a published version (provider-repair.ts).
    const { existing, outcome } = await commitProviderRepair(store, session, actor, upload, attest);
    return publishResult(existing, outcome);
  }
  const { bucket } = store;
  const address = { hostname: session.hostname, namespace: session.namespace, type: upload.type };
  const draft = draftRecord(address, upload);
  // The provenance policy before any work (publishVersion checks it again under the lease).
  if (attest) await checkProvenancePolicy(store.blobs, address.hostname, address.namespace, attest);
  const { staged, held } = await readStagedFiles(bucket, session, upload);
  const reader = heldRangeReader(bucket, held);
  const bytesOf = async (filename: string) => {
    const key = staged.get(filename)!;
    return held.get(key) ?? new Uint8Array(await (await bucket.get(key))!.arrayBuffer());
  };

  // The one pipeline of a release's checks (src/protocol/provider-release.ts), on the files as uploaded: the
  // CLI runs it on the same files before sending them.
  const checked = await checkProviderRelease({
    type: upload.type,
    version: upload.version,
    files: upload.files.map((f) => ({ filename: f.filename, size: f.size, sha256Hex: f.sha256, shown: f.filename })),
    readArchive: async (file) => {
      const zip = storedZip(reader, staged.get(file.filename)!, file.size);
      const label = `archive ${file.filename}`;
      const directory = await readZipDirectory(zip, label);
      const entries = directory.entries.map((e) => ({ name: e.name, isDirectory: e.isDirectory, size: e.uncompressedSize, unixMode: e.unixMode }));
      return { entries, h1: await zipH1(zip, directory, label) };
    },
    readSmall: (file) => bytesOf(file.filename),
    declaredProtocols: upload.protocols,
    ...(upload.h1 ? { declaredH1: upload.h1 } : {}),
    concurrency: 1,
  });
  const sums = checked.shasums!.bytes;
  const packages = checked.packages;

  // The signature: the client's, verified against the namespace's keys, or the registry-held key's.
  const sigFile = upload.files.find((f) => f.filename === draft.shasumsSignatureFilename);
  const { signature, key: signingKey } = sigFile
    ? await verifiedSignature(store, address, sums, checked.signature!.bytes, sigFile.filename)
    : await (await signerFor({ kv: store.kv, signingKeySecret, hostname: address.hostname, namespace: address.namespace }, upload.type, upload.version)).sign(
        sums,
      );

  const record: VersionRecord = { ...draft, packages, signingKey, signatureFile: { sha256: sha256Hex(signature), size: signature.byteLength } };
  const open = (filename: string, size: number) => held.get(staged.get(filename)!) ?? stagedStream(bucket, staged.get(filename)!, size);
  const files = releaseFiles(upload, record, signature, open);

  const name = `${formatAddress(address)} ${upload.version}`;
  const { outcome, existing } = await withWorkerLease(store.blobs, providerLeaseName(address), actor, `publish ${name}`, async (lease) => {
    // Decide on the stored record before writing anything, docs included (they never change once written): a
    // version committed meanwhile with other bytes is a 409 with nothing written, as in publish-provider.
    // The version's record and the provider's index, each read once (as publish-provider does) and handed on.
    const { existing, lists } = await beginProviderPublish(
      store,
      address,
      upload.version,
      () => {},
      () => lease.check(),
    );
    if (existing && !sameRelease(existing, record)) throw differentContentsError(record, existing);
    const docs = await writeUploadDocs(store, address, upload, lease);
    return { existing, outcome: await publishVersion(store, record, files, () => {}, { lease, existing, lists, docs, ...(attest ? { attest } : {}) }) };
  });
  return publishResult(existing ?? record, outcome);
}

/** A staged file up to this size, sent whole, is held in memory for the commit. */
const HELD_FILE_BYTES = 4 * 1024 * 1024;
/** At most this much in all (a release of many platforms reads the rest by range). */
const HELD_TOTAL_BYTES = 16 * 1024 * 1024;

/** What publishVersion writes: every uploaded file but the client's signature and the manifest (from `open`), then the signature the commit settled on. */
function releaseFiles(
  upload: ProviderUpload,
  record: VersionRecord,
  signature: Uint8Array,
  open: (filename: string, size: number) => Uint8Array | ReadableStream<Uint8Array>,
): ReleaseFile[] {
  const files: ReleaseFile[] = upload.files
    .filter((f) => f.filename !== record.shasumsSignatureFilename && parseReleaseFilename(f.filename)?.kind !== 'manifest')
    .map((f) => ({ filename: f.filename, sha256Hex: f.sha256, size: f.size, contentType: f.contentType, open: () => open(f.filename, f.size) }));
  files.push({
    filename: record.shasumsSignatureFilename,
    sha256Hex: record.signatureFile!.sha256,
    size: signature.byteLength,
    contentType: 'application/pgp-signature',
    open: () => signature,
  });
  return files;
}

/** The client's detached signature of `sums`, verified with a key of the namespace; InputError naming `filename` otherwise. */
async function verifiedSignature(
  store: PublishStore,
  address: { hostname: string; namespace: string },
  sums: Uint8Array,
  signature: Uint8Array,
  filename: string,
): Promise<{ signature: Uint8Array; key: SigningKey }> {
  return { signature, key: await verifyDetached(sums, signature, await readSigningKeys(store.kv, address.hostname, address.namespace), filename) };
}

/**
 * Every uploaded file complete with its declared size and SHA-256 (InputError otherwise), by its staged key.
 * Small files sent whole are read once and kept for the commit (checks, signature, copy): one R2 read each
 * instead of a head, 2 + 2 × entries ranged reads and a read for the copy. Bounded: HELD_FILE_BYTES a file,
 * HELD_TOTAL_BYTES in all; larger files are checked in R2, read by range and copied from R2. The files are
 * read together (reads only; all settle before any error is thrown, the first in file order). A file whose
 * bytes came with the manifest (`content`, checked against its size and SHA-256 when the session started) is
 * held from the session, under the key it would have been staged at: nothing is read for it.
 */
async function readStagedFiles(
  bucket: PublishStore['bucket'],
  session: UploadSession,
  upload: ProviderUpload,
): Promise<{ staged: Map<string, string>; held: Map<string, Uint8Array> }> {
  let budget = HELD_TOTAL_BYTES;
  const holds = upload.files.map((file) => {
    if (file.content !== undefined) return true;
    const hold = partCount(session, file) === 1 && file.size <= HELD_FILE_BYTES && file.size <= budget;
    if (hold) budget -= file.size;
    return hold;
  });
  const read = await allSettledInOrder(
    upload.files.map(async (file, i) =>
      file.content !== undefined
        ? { key: uploadFileKey(session.id, file.filename), bytes: inlineBytes(file.content)! }
        : holds[i]
          ? await readStagedFile(bucket, session, file)
          : { key: await completeStagedFile(bucket, session, file), bytes: null },
    ),
  );
  const staged = new Map<string, string>();
  const held = new Map<string, Uint8Array>();
  upload.files.forEach((file, i) => {
    const { key, bytes } = read[i]!;
    staged.set(file.filename, key);
    if (bytes) held.set(key, bytes);
  });
  return { staged, held };
}
