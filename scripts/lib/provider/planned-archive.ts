import type { Platform } from '../../../src/protocol/index';
import type { ArchiveDigest } from './archive';

/** One archive of a release on disk, as readRelease (release.ts) plans it (checked by src/protocol/provider-release.ts). */
export interface PlannedArchive {
  platform: Platform;
  /** Name it is published under: terraform-provider-TYPE_VERSION_OS_ARCH.zip. */
  filename: string;
  /** The file on disk (a temporary zip for --binary). */
  path: string;
  digest: ArchiveDigest;
}
