import type { Actor } from '../../store/audit/actor';
import { formatModuleAddress } from '../../protocol/modules-v1';
import { moduleLeaseName } from '../../store/layout';
import { publishModuleVersion } from '../../store/modules/write';
import { readModuleRecord } from '../../store/modules/record';
import type { ModuleUpload, UploadSession } from '../../store/uploads/session';
import { completeStagedFile, stagedStream } from '../../store/uploads/staged';
import { checkStoredModulePackage } from '../../store/uploads/stored-module';
import type { PublishStore } from './context';
import { checkProvenancePolicy, type Attester } from '../../store/provenance';
import { withWorkerLease } from './lease';
import { moduleDraft } from './modules';
import { moduleResult } from '../../store/modules/result';

/**
 * Commits a module upload: the package complete with its declared size and
 * SHA-256, then the package rules checked on the stored bytes
 * (stored-module.ts), then src/store's publishModuleVersion under the
 * module's lease (package copied from the staging area, documents, the R2
 * record as commit point, list and catalog). Throws InputError (400; 409 for
 * a version published meanwhile with another package) with nothing published.
 */
export async function commitModule(store: PublishStore, session: UploadSession, actor: Actor, upload: ModuleUpload, attest?: Attester) {
  const address = { hostname: session.hostname, namespace: session.namespace, name: upload.name, system: upload.system };
  const file = upload.files[0];
  if (attest) await checkProvenancePolicy(store.blobs, address.hostname, address.namespace, attest);
  const key = await completeStagedFile(store.bucket, session, file);
  await checkStoredModulePackage(store.bucket, key, file.size, upload.format, file.filename);
  const record = moduleDraft(address, upload.version, { format: upload.format, size: file.size, sha256: file.sha256 });
  const label = `${formatModuleAddress(address)} ${upload.version}`;
  const outcome = await withWorkerLease(store.blobs, moduleLeaseName(address), actor, `publish ${label}`, (lease) =>
    publishModuleVersion(
      store,
      record,
      upload.docs,
      {
        sha256Hex: file.sha256,
        size: file.size,
        contentType: file.contentType,
        open: () => stagedStream(store.bucket, key, file.size),
      },
      () => {},
      { lease, ...(attest ? { attest } : {}) },
    ),
  );
  const stored = outcome === 'published' ? record : ((await readModuleRecord(store, address, upload.version)) ?? record);
  return moduleResult(stored, outcome);
}
