/**
 * What `npm run mirror -- … --json` prints: one object, per provider, per
 * version, per platform. `mirrored`: stored now; `unchanged`: already held
 * with the same bytes; `failed`: not stored, `reason` says which URL or file
 * and which check; `skipped`: not offered by the source (not an error);
 * `planned`: what a --dry-run would fetch.
 */
export type ItemStatus = 'mirrored' | 'unchanged' | 'failed' | 'skipped' | 'planned';

export interface PlatformSummary {
  platform: string;
  status: ItemStatus;
  reason?: string;
  /** Lock-file hashes once verified. */
  h1?: string;
  zh?: string;
  size?: number;
}

export interface VersionSummary {
  version: string;
  status: ItemStatus;
  reason?: string;
  platforms: PlatformSummary[];
}

export interface ProviderSummary {
  /** HOST/NS/TYPE */
  address: string;
  status: ItemStatus;
  reason?: string;
  versions: VersionSummary[];
}

export interface MirrorSummary {
  command: 'sync' | 'import';
  dry_run: boolean;
  /** True when nothing failed (the exit code is 0 exactly then). */
  ok: boolean;
  providers: ProviderSummary[];
  /** Requests made to the source registries, by kind. */
  upstream_requests?: { json: number; small: number; archive: number };
}

/** The status of a group from its members: failed wins, then mirrored, planned, unchanged, skipped. */
export function combinedStatus(statuses: readonly ItemStatus[]): ItemStatus {
  for (const status of ['failed', 'mirrored', 'planned', 'unchanged'] as const) if (statuses.includes(status)) return status;
  return 'skipped';
}
