import type { IRequest } from 'itty-router';
import { settings } from '../../config';
import type { Env } from '../../env';
import { pathSegment } from '../../http/responses';
import { formatModuleAddress, moduleAddress, type ModuleAddress } from '../../protocol/modules-v1';
import { parseVersion } from '../../protocol/version';
import { moduleArchiveFilename, moduleLeaseName } from '../../store/layout';
import { differentPackageError, readModuleRecord, rebuildModuleIndex, samePackage, verifyModuleVersion } from '../../store/modules/write';
import type { ModuleVersionRecord } from '../../store/modules/types';
import { newUploadId, writeUploadSession, type ModuleUpload, type UploadSession } from '../../store/uploads/session';
import { asPublisher, audit, json, PART_BYTES, readJsonBody } from './context';
import { withWorkerLease } from './lease';
import { parseModuleManifest } from './module-manifest';
import { sessionResponse } from './providers';
import { attesterFor } from '../../provenance/attest';
import { checkProvenancePolicy } from '../../store/provenance';

/**
 * `POST /v1/publish/modules/:namespace/:name/:system/:version` — starts a
 * module publish; the body is the manifest (module-manifest.ts). Answers as
 * the provider route does: 201 with the upload's URLs, 200 "unchanged" /
 * "repaired" for a version already published with this package, 200
 * "dry-run", 400/409/413 with the CLI's messages, 401/403 for credentials.
 */

const MAX_MANIFEST_BYTES = 2 * 1024 * 1024;

export async function createModuleUpload(request: IRequest, env: Env, ctx: ExecutionContext): Promise<Response> {
  const address = moduleAddress(
    settings(env).hostname,
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.name, 'name'),
    pathSegment(request.params.system, 'system'),
  );
  const version = parseVersion(pathSegment(request.params.version, 'version'));
  const what = { action: 'module.publish', target: `${formatModuleAddress(address)} ${version}` } as const;

  return asPublisher(request, env, ctx, address.namespace, what, async (actor, store, ci) => {
    // A namespace requiring provenance refuses other publishers before anything is read or written.
    await checkProvenancePolicy(store.blobs, address.hostname, address.namespace, attesterFor(actor, ci, settings(env), store.blobs));
    const manifest = parseModuleManifest(await readJsonBody(request, MAX_MANIFEST_BYTES));
    const draft = moduleDraft(address, version, manifest);
    const existing = await readModuleRecord(store, address, version);
    if (existing) {
      if (!samePackage(existing, draft)) throw differentPackageError(draft, existing);
      if (manifest.dryRun) return json(moduleResult(existing, 'dry-run'));
      const repairs = await withWorkerLease(store.blobs, moduleLeaseName(address), actor, `publish ${what.target}`, async (lease) => {
        const count = await verifyModuleVersion(
          store,
          existing,
          manifest.docs,
          undefined,
          () => {},
          () => lease.check(),
        );
        await rebuildModuleIndex(
          store,
          address,
          () => {},
          () => lease.check(),
        );
        return count;
      });
      await audit(store, ctx, { ...what, actor, outcome: repairs > 0 ? 'ok' : 'unchanged' });
      return json(moduleResult(existing, repairs > 0 ? 'repaired' : 'unchanged'));
    }
    if (manifest.dryRun) return json(moduleResult(draft, 'dry-run'));
    const now = Date.now();
    const upload: ModuleUpload = {
      kind: 'module',
      name: address.name,
      system: address.system,
      version,
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
    };
    const session: UploadSession = {
      id: newUploadId(),
      hostname: address.hostname,
      namespace: address.namespace,
      actor,
      created: new Date(now).toISOString(),
      expires: new Date(now + 24 * 3600_000).toISOString(),
      partSize: PART_BYTES,
      upload,
    };
    await writeUploadSession(store.blobs, session);
    return json(sessionResponse(request, session), 201);
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

/** The fields of publish-module's --json result the server knows. */
export function moduleResult(record: ModuleVersionRecord, status: 'published' | 'unchanged' | 'repaired' | 'dry-run') {
  return {
    address: formatModuleAddress(record.address),
    version: record.version,
    filename: record.filename,
    format: record.format,
    sha256: record.sha256,
    size: record.size,
    status,
  };
}
