import type { ProviderAddress } from '../../protocol/address';
import type { Lease } from '../../store/lease';
import { writeVersionDocs } from '../../store/pages/write';
import type { ProviderUpload } from '../../store/uploads/session';
import type { PublishStore } from './context';

/**
 * Writes the upload's docs (publish-provider --docs) under the provider's
 * lease, as the CLI does: the same docs again change nothing, other docs for
 * a version that has some throw VersionConflictError (409). Returns what
 * publishVersion puts in the page data ({} without docs). With `dryRun` it
 * only checks.
 */
export async function writeUploadDocs(
  store: PublishStore,
  address: ProviderAddress,
  upload: ProviderUpload,
  lease: Pick<Lease, 'check'> | null,
  dryRun = false,
): Promise<Record<string, string>> {
  if (!upload.docs) return {};
  lease?.check();
  await writeVersionDocs(store.kv, address, upload.version, upload.docs, dryRun);
  return { [upload.version]: upload.docs.providerSchema.description ?? '' };
}
