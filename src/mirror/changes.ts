import type { Env } from '../env';
import { formatAddress, type ProviderAddress } from '../protocol/address';

/**
 * An upstream that now announces another SHA-256 for a version and platform
 * the mirror holds: mirrored bytes never change, so ours stays served and
 * the event is logged for an operator to investigate.
 */
export async function noteUpstreamChange(
  _env: Env, address: ProviderAddress, version: string, platform: string, ours: readonly string[], theirs: string, documentUrl: string,
): Promise<void> {
  console.warn(`pull-through: UPSTREAM CHANGED: ${formatAddress(address)} ${version} ${platform}: ${documentUrl} now gives shasum ${theirs}; the mirror holds ${ours.join(' ')} and keeps it`);
}
