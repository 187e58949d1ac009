import type { IRequest } from 'itty-router';
import { settings } from '../../config';
import type { Env } from '../../env';
import { checkModuleKeys } from '../../store/key-limits';
import { checkNewModuleVersion } from '../../store/module-limits';
import { pathSegment } from '../../http/responses';
import { formatModuleAddress, moduleAddress, type ModuleAddress } from '../../protocol/modules-v1';
import { parseVersion } from '../../protocol/version';
import { moduleArchiveFilename, moduleLeaseName } from '../../store/layout';
import { differentPackageError, readModuleRecord, samePackage } from '../../store/modules/record';
import { rebuildModuleIndex } from '../../store/modules/lists';
import { packageLost, verifyModuleVersion } from '../../store/modules/write';
import type { ModuleVersionRecord } from '../../store/modules/types';
import { moduleResult } from '../../store/modules/result';
import type { Actor } from '../../store/audit/actor';
import { type ModuleUpload } from '../../store/uploads/session';
import { audit, json, readJsonBody, type Publisher, type PublishStore, type PublishTarget } from './context';
import { withWorkerLease } from './lease';
import { parseModuleManifest } from './module-manifest';
import { sessionResponse, startSession } from './providers';
import { attesterFor } from '../../provenance/attest';
import { checkProvenancePolicy } from '../../store/provenance';

/**
 * `POST /v1/publish/modules/:namespace/:name/:system/:version` — starts a
 * module publish; the body is the manifest (module-manifest.ts). Answers as
 * the provider route does: 201 with the upload's URLs (also for a version
 * published with this package whose package object R2 lost: the commit
 * restores it), 200 "unchanged" / "repaired" for a version already
 * published with this package, 200
 * "dry-run", 400/409/413 with the CLI's messages, 401/403 for credentials.
 */

const MAX_MANIFEST_BYTES = 2 * 1024 * 1024;

/** A module version's publish target: the package `:namespace/:name/:system` (400 for a bad name or version, before any credential is looked at). */
export interface ModuleRelease extends PublishTarget {
  address: ModuleAddress;
  version: string;
}

/** The guard's resolver (asPublisherOf) for `/v1/publish/modules/:namespace/:name/:system/:version`. */
export function moduleRelease(request: IRequest, env: Env): ModuleRelease {
  const address = moduleAddress(
    settings(env).hostname,
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.name, 'name'),
    pathSegment(request.params.system, 'system'),
  );
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const what = { action: 'module.publish', target: `${formatModuleAddress(address)} ${version}` } as const;
  checkModuleKeys(address, version, what.target);
  return { pkg: { kind: 'module', ...address }, what, address, version };
}

/** The handler behind `asPublisherOf(moduleRelease)`: the caller may publish the module. */
export async function createModuleUpload(
  request: IRequest,
  env: Env,
  ctx: ExecutionContext,
  { actor, store, ci, target }: Publisher<ModuleRelease>,
): Promise<Response> {
  const { address, version, what } = target;
  // A namespace requiring provenance refuses other publishers before anything is read or written.
  await checkProvenancePolicy(store.blobs, address.hostname, address.namespace, attesterFor(actor, ci, settings(env), store.blobs));
  const manifest = parseModuleManifest(await readJsonBody(request, MAX_MANIFEST_BYTES));
  const draft = moduleDraft(address, version, manifest);
  const existing = await readModuleRecord(store, address, version);
  if (existing) {
    if (!samePackage(existing, draft)) throw differentPackageError(draft, existing);
    if (manifest.dryRun) return json(moduleResult(existing, 'dry-run'));
    // The package lost from R2: the client uploads it again, the commit (publishModuleVersion's repair) restores it.
    if (await packageLost(store.blobs, existing))
      return json(sessionResponse(request, await startSession(store, actor, address, moduleUpload(draft, manifest, true))), 201);
    const repairs = await repairExisting(store, actor, existing, manifest.docs, what.target);
    await audit(store, ctx, { ...what, actor, outcome: repairs > 0 ? 'ok' : 'unchanged' });
    return json(moduleResult(existing, repairs > 0 ? 'repaired' : 'unchanged'));
  }
  // A new version must fit KV's limits: its keys, and the hostname's module catalogue (refused now, not after the commit).
  await checkNewModuleVersion(store.kv, address, version, what.target);
  if (manifest.dryRun) return json(moduleResult(draft, 'dry-run'));
  return json(sessionResponse(request, await startSession(store, actor, address, moduleUpload(draft, manifest))), 201);
}

/** The upload session's description of a module publish (`repair`: a re-run restoring the published version's lost package). */
function moduleUpload(draft: ModuleVersionRecord, manifest: ReturnType<typeof parseModuleManifest>, repair = false): ModuleUpload {
  return {
    kind: 'module',
    name: draft.address.name,
    system: draft.address.system,
    version: draft.version,
    format: manifest.format,
    docs: manifest.docs,
    files: [
      {
        filename: draft.filename,
        size: manifest.size,
        sha256: manifest.sha256,
        contentType: manifest.format === 'zip' ? 'application/zip' : 'application/gzip',
      },
    ],
    ...(repair ? { repair: true as const } : {}),
  };
}

/**
 * The same package published again: under the module's lease, what a publish that stopped halfway left out is
 * written now (the version's files and documents, then the module's index). Returns how many pieces were repaired.
 */
async function repairExisting(
  store: PublishStore,
  actor: Actor,
  existing: ModuleVersionRecord,
  docs: Parameters<typeof verifyModuleVersion>[2],
  target: string,
): Promise<number> {
  return withWorkerLease(store.blobs, moduleLeaseName(existing.address), actor, `publish ${target}`, async (lease) => {
    const count = await verifyModuleVersion(
      store,
      existing,
      docs,
      undefined,
      () => {},
      () => lease.check(),
    );
    await rebuildModuleIndex(
      store,
      existing.address,
      () => {},
      () => lease.check(),
    );
    return count;
  });
}

export function moduleDraft(address: ModuleAddress, version: string, m: { format: 'tar.gz' | 'zip'; size: number; sha256: string }): ModuleVersionRecord {
  return {
    address,
    version,
    filename: moduleArchiveFilename(address, version, m.format),
    format: m.format,
    sha256: m.sha256,
    size: m.size,
    publishedAt: new Date().toISOString(),
  };
}
