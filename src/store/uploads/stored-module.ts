import type { ModuleArchiveFormat } from '../../protocol/modules-v1';
import { checkModulePackage } from '../../protocol/module-package-check';
import { storedZip, streamedZip } from './stored-zip';

/**
 * The module package pipeline (src/protocol/module-package-check.ts), which
 * `publish-module` runs on a file (scripts/lib/module/archive.ts), run on a
 * package stored in R2 without holding it in memory: a zip's directory by
 * range and its entries in one stream; a .tar.gz streamed once through the
 * runtime's gzip DecompressionStream and the one tar parser (file data is
 * skipped, never copied). Refused: an absolute path or a ".."
 * segment, a link leaving the package, a device or FIFO, no .tf/.tofu file at
 * the root, a damaged archive.
 */

/** Checks the package stored under `key` with the one pipeline of a package's checks; throws InputError naming `label` for a package the CLI would refuse. */
export async function checkStoredModulePackage(bucket: R2Bucket, key: string, size: number, format: ModuleArchiveFormat, label: string): Promise<void> {
  if (format === 'zip') {
    // The directory by range (storedZip), the entries through one stream (streamedZip), only links inflated: 3 R2 subrequests at most.
    const entries = streamedZip(bucket as never, key, size);
    try {
      await checkModulePackage({ format, directory: storedZip(bucket as never, key, size), entries }, label);
    } finally {
      await entries.close();
    }
    return;
  }
  // A .tar.gz streamed once (file data skipped, never copied).
  const object = await bucket.get(key);
  if (object === null) throw new Error(`${key} disappeared while being read`);
  await checkModulePackage({ format, stream: () => object.body }, label);
}
