import type { Env } from '../env';
import type { Actor } from '../store/audit/actor';
import { formatAddress, type ProviderAddress } from '../protocol/address';
import { appendAuditEntry } from '../store/audit/write';
import type { AuditOutcome } from '../store/audit/entry';

/**
 * What pull-through tells the operator: the audit log (src/store/audit/)
 * records each archive it stored or refused, and an upstream that now
 * announces another SHA-256 for a version and platform the mirror holds
 * (mirrored bytes never change: ours stays served). Best effort: a failed
 * audit write is logged, never fails the client's request.
 */

/** The Worker acting under the operator's stored policy. */
export const PULL_ACTOR: Actor = { kind: 'operator', via: 'remote' };

// One entry per isolate for the same announced change, not one per VERSION.json request.
const noted = new Set<string>();

/** Logs and records (action mirror.upstream-changed, outcome refused) an upstream that changed a held package. */
export async function noteUpstreamChange(
  env: Env,
  address: ProviderAddress,
  version: string,
  platform: string,
  ours: readonly string[],
  theirs: string,
  documentUrl: string,
): Promise<void> {
  const reason = `UPSTREAM CHANGED: ${documentUrl} now gives shasum ${theirs} for ${platform}; the mirror holds ${ours.join(' ')} and keeps it (mirrored bytes never change) — investigate the upstream`;
  console.warn(`pull-through: ${formatAddress(address)} ${version}: ${reason}`);
  const key = `${formatAddress(address)} ${version} ${platform} ${theirs}`;
  if (noted.has(key)) return;
  noted.add(key);
  await audit(env, 'mirror.upstream-changed', `${formatAddress(address)} ${version}`, 'refused', reason);
}

/** Records a pull-through write (mirror.pull): stored (ok, with the archive's digest) or refused (the failed check). */
export async function notePull(
  env: Env,
  address: ProviderAddress,
  version: string,
  outcome: AuditOutcome,
  reason: string,
  digests?: Record<string, string>,
): Promise<void> {
  await audit(env, 'mirror.pull', `${formatAddress(address)} ${version}`, outcome, reason, digests);
}

async function audit(env: Env, action: string, target: string, outcome: AuditOutcome, reason: string, digests?: Record<string, string>): Promise<void> {
  try {
    await appendAuditEntry({ blobs: env.REGISTRY_R2 }, { actor: PULL_ACTOR, action, target, outcome, reason, ...(digests ? { digests } : {}) });
  } catch (error) {
    console.error(`pull-through: could not write the audit entry (${action} ${target}): ${(error as Error).message}`);
  }
}
