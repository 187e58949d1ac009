import type { IRequest } from 'itty-router';
import { settings } from '../../config';
import type { Env } from '../../env';
import { checkProviderKeys } from '../../store/key-limits';
import { checkVersionsDocumentRoom } from '../../store/value-limits';
import { pathSegment } from '../../http/responses';
import type { Actor } from '../../store/audit/actor';
import { formatAddress, parseProviderName, providerAddress, type ProviderAddress } from '../../protocol/address';
import { parsePlatformName } from '../../protocol/platform';
import { parseReleaseFilename, shasumsFilename, shasumsSignatureFilename } from '../../protocol/release-files';
import { parseVersion } from '../../protocol/version';
import type { ProviderPublishResult, UploadSessionBody } from '../../protocol/publish-api';
import { InputError } from '../../protocol/errors';
import { providerLeaseName } from '../../store/layout';
import { draftVersionRecord } from '../../store/providers/draft';
import { publishVersion } from '../../store/providers/write';
import { differentContentsError, readVersionRecord, sameRelease } from '../../store/providers/version-records';
import type { PackageRecord, VersionRecord } from '../../store/types';
import {
  MAX_OPEN_UPLOADS,
  newUploadId,
  openUploads,
  sweepExpiredUploads,
  writeUploadSession,
  type ProviderUpload,
  type UploadBucket,
  type UploadSession,
} from '../../store/uploads/session';
import { audit, json, PART_BYTES, readJsonBody, type Publisher, type PublishStore, type PublishTarget } from './context';
import { writeUploadDocs } from './provider-docs';
import { withWorkerLease } from './lease';
import { parseProviderManifest } from './manifest';
import { refuseUnlessHeldKey } from './signing';
import { filesToRestore } from './provider-repair';
import { attesterFor } from '../../provenance/attest';
import { checkProvenancePolicy } from '../../store/provenance';

/**
 * `POST /v1/publish/providers/:namespace/:type/:version` — starts a provider
 * publish. The body is the manifest (manifest.ts). Answers:
 *   201 {"upload": ID, "files": [{filename, size, url, parts}], "commit_url", "expires", "part_size"}
 *       upload each file with PUT to its url (in `parts` parts of part_size
 *       bytes when parts > 1), then POST commit_url;
 *   200 {"status": "unchanged" | "repaired", …} when the version is already
 *       published with these files (an interrupted commit is completed);
 *   201 as above, listing only the files R2 lost, when the version is
 *       published with these files but some are lost (the commit restores
 *       them; 409 when a lost one cannot be: provider-repair.ts);
 *   200 {"status": "dry-run", …} for "dry_run": true (nothing written);
 *   400 / 409 / 413 with the CLI's messages; 401 / 403 for credentials.
 */

const SESSION_HOURS = 24;
// Room for the docs of a large provider (publish-provider --docs); KV holds up to 25 MiB.
const MAX_MANIFEST_BYTES = 8 * 1024 * 1024;

/** A provider version's publish target: the package `:namespace/:type` (400 for a bad name or version, before any credential is looked at). */
export interface ProviderRelease extends PublishTarget {
  address: ProviderAddress;
  version: string;
}

/** The guard's resolver (asPublisherOf) for `/v1/publish/providers/:namespace/:type/:version`. */
export function providerRelease(request: IRequest, env: Env): ProviderRelease {
  const namespace = parseProviderName(pathSegment(request.params.namespace, 'namespace'), 'namespace');
  const type = parseProviderName(pathSegment(request.params.type, 'type'), 'type');
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const address = providerAddress(settings(env).hostname, namespace, type);
  const what = { action: 'provider.publish', target: `${formatAddress(address)} ${version}` } as const;
  checkProviderKeys(address, version, what.target);
  return { pkg: { kind: 'provider', namespace, type }, what, address, version };
}

/** The handler behind `asPublisherOf(providerRelease)`: the caller may publish the provider. */
export async function createProviderUpload(
  request: IRequest,
  env: Env,
  ctx: ExecutionContext,
  { actor, store, ci, target }: Publisher<ProviderRelease>,
): Promise<Response> {
  const { address, version, what } = target;
  const { namespace, type } = address;
  // A namespace requiring provenance refuses other publishers before anything is read or written.
  const attest = attesterFor(actor, ci, settings(env), store.blobs);
  await checkProvenancePolicy(store.blobs, address.hostname, namespace, attest);
  const { upload, dryRun } = parseProviderManifest(await readJsonBody(request, MAX_MANIFEST_BYTES), type, version);
  const draft = draftRecord(address, upload);
  const existing = await readVersionRecord(store, address, version);
  if (existing) {
    if (!sameRelease(existing, draft)) throw differentContentsError(draft, existing);
    if (dryRun) {
      await writeUploadDocs(store, address, upload, null, true);
      return json(publishResult(existing, 'dry-run'));
    }
    // Release files lost from R2: the client uploads exactly those, the commit restores them (provider-repair.ts).
    const lost = await filesToRestore(store, existing, upload);
    // Restored from uploads only (provider-repair.ts reads staged files): bytes sent with the manifest are uploaded like the rest.
    const restore = lost.map(({ content: _content, ...file }) => file);
    if (lost.length > 0) return json(sessionResponse(request, await startSession(store, actor, address, { ...upload, files: restore, repair: true })), 201);
    // Already committed: verify it and complete what an interrupted commit left (documents, lists); add docs it lacks.
    const outcome = await withWorkerLease(store.blobs, providerLeaseName(address), actor, `publish ${what.target}`, async (lease) =>
      publishVersion(store, existing, [], () => {}, { lease, attest, docs: await writeUploadDocs(store, address, upload, lease) }),
    );
    const status = outcome === 'repaired' ? 'repaired' : 'unchanged';
    await audit(store, ctx, {
      ...what,
      actor,
      outcome: status === 'repaired' ? 'ok' : 'unchanged',
      ...(status === 'repaired' ? { reason: 'repaired what an interrupted publish left missing' } : {}),
    });
    return json(publishResult(existing, status));
  }
  // A new version must fit the versions document KV holds (refused now, not after the commit).
  await checkVersionsDocumentRoom(store.kv, address, { version, protocols: draft.protocols, platforms: draft.packages });
  const signed = upload.files.some((f) => f.filename === shasumsSignatureFilename(type, version));
  if (!signed) await refuseUnlessHeldKey({ kv: store.kv, hostname: address.hostname, namespace }, type, version); // refuses now, not after the uploads
  if (dryRun) return json(publishResult(draft, 'dry-run'));
  const session = await startSession(store, actor, address, upload);
  return json(sessionResponse(request, session), 201);
}

/** The version record a manifest describes, before the server has checked the bytes (h1 and signing key unknown yet). */
export function draftRecord(address: ProviderAddress, upload: ProviderUpload): VersionRecord {
  const sums = upload.files.find((f) => f.filename === shasumsFilename(upload.type, upload.version))!;
  const packages: PackageRecord[] = upload.files.flatMap((f) => {
    const parsed = parseReleaseFilename(f.filename);
    if (parsed?.kind !== 'archive') return [];
    const platform = parsePlatformName(parsed.platform!);
    return [{ os: platform.os, arch: platform.arch, filename: f.filename, shasum: f.sha256, h1: upload.h1?.[f.filename] ?? '', size: f.size }];
  });
  return draftVersionRecord(address, upload.version, upload.protocols, packages, { sha256: sums.sha256, size: sums.size });
}

/** The result (src/protocol/publish-api.ts, what the CLI's `--json` prints) for a record. */
export function publishResult(record: VersionRecord, status: ProviderPublishResult['status']): ProviderPublishResult {
  return {
    address: formatAddress(record.address),
    version: record.version,
    protocols: record.protocols,
    platforms: record.packages,
    key_id: record.signingKey.key_id,
    status,
  };
}

/**
 * Starts an upload session of `actor` for `upload` (provider or module) in
 * the address's namespace, valid SESSION_HOURS. First sweeps up to
 * SWEEP_PER_START expired sessions of anyone (store/uploads/session.ts; a
 * failed sweep is logged, never a failed start), then counts the
 * credential's open sessions: at MAX_OPEN_UPLOADS already, throws
 * InputError 429 naming the fix (commit or abandon them; when the soonest
 * expires). Concurrent starts of one credential are counted each before
 * the others write, so they can pass the cap by at most their number.
 */
export async function startSession(
  store: PublishStore,
  actor: Actor,
  address: { hostname: string; namespace: string },
  upload: UploadSession['upload'],
): Promise<UploadSession> {
  const now = Date.now();
  await sweepExpiredUploads(store.bucket as unknown as UploadBucket, now).catch((error: unknown) =>
    console.error(`upload sweep failed: ${(error as Error)?.message ?? error}`),
  );
  const { open, soonest } = await openUploads(store.blobs, actor, now);
  if (open >= MAX_OPEN_UPLOADS) {
    throw new InputError(
      `these credentials have ${open} open upload sessions, the most at once (${MAX_OPEN_UPLOADS}): commit the ones you started (POST their commit_url) or wait until the soonest expires at ${soonest}; sessions expire ${SESSION_HOURS} hours after they start`,
      429,
    );
  }
  const session: UploadSession = {
    id: newUploadId(),
    hostname: address.hostname,
    namespace: address.namespace,
    actor,
    created: new Date(now).toISOString(),
    expires: new Date(now + SESSION_HOURS * 3600_000).toISOString(),
    partSize: PART_BYTES,
    upload,
  };
  await writeUploadSession(store.blobs, session);
  return session;
}

/** What a client needs to upload and commit: one URL per file, the number of parts of each. */
export function sessionResponse(request: Request, session: UploadSession): UploadSessionBody {
  const base = `/v1/publish/uploads/${session.id}`;
  void request;
  const withManifest = session.upload.files.filter((f) => f.content !== undefined).map((f) => f.filename);
  return {
    upload: session.id,
    expires: session.expires,
    part_size: session.partSize,
    // A file whose bytes came with the manifest needs no upload.
    files: session.upload.files
      .filter((f) => f.content === undefined)
      .map((f) => ({
        filename: f.filename,
        size: f.size,
        url: `${base}/${encodeURIComponent(f.filename)}`,
        parts: f.size > session.partSize ? Math.ceil(f.size / session.partSize) : 1,
      })),
    ...(withManifest.length > 0 ? { with_manifest: withManifest } : {}),
    commit_url: `${base}/commit`,
  };
}
