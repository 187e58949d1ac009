import type { Env } from '../../env';
import { formatAddress, type ProviderAddress } from '../../protocol/address';
import { pullLeaseName, releaseObjectKey } from '../../store/layout';
import { acquireLease, type Lease } from '../../store/lease';
import { checkPullRoom, commitPulledPackage, readManifest, type PullManifest } from '../../store/mirror/pull';
import { readVersionRecord } from '../../store/providers/version-records';
import { pullContext, type PullContext } from '../../mirror/pull-through';
import { UpstreamError } from '../../mirror/upstream-http';
import { hasAnnouncedSize, holdsProviderExecutable, matchesSignedSums } from '../../mirror/archive-checks';
import { storedArchive } from '../../mirror/pulled-archive';
import { verifyMirroredArchive, type ArchiveSource } from '../../mirror/verify-archive';
import { notePull } from '../../mirror/changes';
import { storeFromEnv } from '../../store/store';

/**
 * The commit side of a pull-through archive (archive.ts streams it): the one verification of the pulled bytes and
 * the version's commit under the provider lease (finish), completing a pull that stored its archive but never
 * committed it (commitIfUncommitted), and noting what a pull did.
 */

/** When this isolate started: the pull leases' owner says so. */
export const ISOLATE_STARTED = new Date().toISOString();

/** Whether the version's record lists `filename` (the commit point of a pulled archive). */
export async function isCommitted(env: Env, address: ProviderAddress, version: string, filename: string): Promise<boolean> {
  const record = await readVersionRecord(storeFromEnv(env), address, version);
  return record?.packages.some((p) => p.filename === filename) ?? false;
}

/** A pull that stored nothing: logged and audited (refused: the upstream's fault; failed: ours). Returns the reason. */
export async function noteNotStored(env: Env, manifest: PullManifest, pkg: PullManifest['packages'][number], from: string, error: unknown): Promise<string> {
  const why = (error as Error).message;
  console.warn(`pull-through: ${formatAddress(manifest.address)} ${manifest.version} ${pkg.os}_${pkg.arch}: not stored: ${why}`);
  await notePull(env, manifest.address, manifest.version, error instanceof UpstreamError ? 'refused' : 'failed', `${pkg.os}_${pkg.arch} from ${from}: ${why}`);
  return why;
}

/** Archives this isolate saw committed: the check below costs one R2 read per archive and isolate. */
const committed = new Set<string>();

/**
 * Completes a pull that stored its archive but never committed it (the
 * Worker was stopped between the verified put and the commit): when the
 * policy still allows the version, the stored manifest lists the archive,
 * the stored object carries its verified SHA-256 and the version record
 * lacks it, the commit runs now under the pull lease (finish), unless the
 * versions document has no room for it (checkPullRoom: refused before any
 * lease is taken). Runs after the response (waitUntil); failures and refusals
 * are logged, never thrown.
 */
export async function commitIfUncommitted(env: Env, address: ProviderAddress, version: string, filename: string): Promise<void> {
  const key = releaseObjectKey(address, version, filename);
  if (committed.has(key)) return;
  try {
    const pull = await pullContext(env, address);
    if (!pull?.allowance.allows(version)) return;
    if (await isCommitted(env, address, version, filename)) {
      if (committed.size >= 4096) committed.clear();
      committed.add(key);
      return;
    }
    const manifest = await readManifest(env.REGISTRY_R2, address, version);
    const pkg = manifest?.packages.find((p) => p.filename === filename);
    const head = pkg ? await env.REGISTRY_R2.head(key) : null;
    if (!manifest || !pkg || head?.customMetadata?.sha256 !== pkg.shasum) return; // not a pulled archive (sync stores record and archive together)
    // A commit the versions document has no room for (KV's 25 MiB) is refused here, before any lease is taken (logged below).
    await checkPullRoom(storeFromEnv(env), manifest, pkg);
    const label = `${formatAddress(address)} ${version}`;
    const lease = await acquireLease(env.REGISTRY_R2, pullLeaseName(address, version), {
      owner: { host: 'worker', pid: 0, processStartedAt: ISOLATE_STARTED, purpose: `pull-through repair ${label} ${pkg.os}_${pkg.arch}` },
      ttlMs: 60_000,
      maxWaitMs: 60_000,
    });
    try {
      if (await isCommitted(env, address, version, filename)) return;
      await finish(pull, manifest, pkg, storedArchive(env.REGISTRY_R2, key), lease, { size: null, what: pkg.downloadUrl, already: true });
      console.warn(`pull-through: ${label} ${pkg.os}_${pkg.arch}: committed an archive stored earlier by a pull that did not finish`);
      await notePull(
        env,
        address,
        version,
        'ok',
        `committed ${pkg.os}_${pkg.arch}, stored earlier (verified against SHA256SUMS signed by ${manifest.signer.key_id}) by a pull that did not finish`,
        { [filename]: pkg.shasum },
      );
    } finally {
      await lease.release();
    }
  } catch (error) {
    console.warn(`pull-through: ${formatAddress(address)} ${version} ${filename}: completing an uncommitted pull failed: ${(error as Error).message}`);
  }
}

/**
 * Verifies a pulled archive with the one archive verification
 * (src/mirror/verify-archive.ts): its bytes are the announced `size` and the
 * signed SHA256SUMS line (checked as they stream, before their end reaches
 * R2 or the client), then, once stored, its zip holds the provider executable
 * (h1 computed on the way); then commits it under the provider lease. An
 * archive without the executable is deleted again (Terraform would refuse
 * it). Throws UpstreamError naming the failed check, or what the commit
 * throws. `already`: the archive was stored by an earlier pull (the commit's
 * lease purpose says so).
 */
export async function finish(
  pull: PullContext,
  manifest: PullManifest,
  pkg: PullManifest['packages'][number],
  archive: ArchiveSource,
  lease: Lease,
  how: { size: number | null; what: string; already: boolean },
): Promise<void> {
  const { address, version } = manifest;
  const verified = await verifyMirroredArchive(
    archive,
    [
      hasAnnouncedSize(how.size, how.what),
      matchesSignedSums(pkg.shasum, how.what),
      holdsProviderExecutable({ type: address.type, version, platform: { os: pkg.os } }, `archive check failed: ${pkg.downloadUrl}`),
    ],
    (message) => new UpstreamError(message),
  );
  lease.check();
  // The store's KV writer: with PUBLIC_DOCUMENTS=r2 it writes the documents' static copies too.
  const store = storeFromEnv(pull.env);
  await commitPulledPackage(
    store.kv,
    store.blobs,
    manifest,
    { os: pkg.os, arch: pkg.arch, filename: pkg.filename, shasum: verified.sha256Hex, h1: verified.h1, size: verified.size },
    {
      owner: {
        host: 'worker',
        pid: 0,
        processStartedAt: ISOLATE_STARTED,
        purpose: `pull-through commit ${formatAddress(address)} ${version}${how.already ? ' (stored earlier)' : ''}`,
      },
      maxWaitMs: 60_000,
    },
  );
}
