import type { IRequest } from 'itty-router';
import { settings } from '../../config';
import type { Env } from '../../env';
import { errorResponse, pathSegment } from '../../http/responses';
import type { Actor } from '../../store/audit/actor';
import { InputError } from '../../protocol/errors';
import { readUploadSession, removeUpload, type UploadBucket, type UploadSession } from '../../store/uploads/session';
import { partCount, partLength, stagePart, stageWholeFile } from '../../store/uploads/staged';
import { audit, json, MAX_BODY_BYTES, publishStore, type AuditTarget, type Publisher, type PublishTarget } from './context';
import { commitModule } from './module-commit';
import { attesterFor } from '../../provenance/attest';
import { commitProvider } from './provider-commit';

/**
 * The upload session routes (see src/store/uploads/session.ts):
 *
 *   PUT  /v1/publish/uploads/:id/:filename[?part=N]   one declared file's bytes, streamed to R2 (never held
 *        in memory): the whole file in one body when it fits (R2 checks its SHA-256 as it is written), else
 *        part N of `parts` (each exactly part_size bytes but the last); 200 {"filename", "part", "size"}.
 *        Content-Length is required (411); a body longer than declared or over MAX_BODY_BYTES (Cloudflare's 100 MB) is 413.
 *   POST /v1/publish/uploads/:id/commit               checks and publishes (provider-commit.ts, module-commit.ts);
 *        200 with the CLI's --json result, status "published", "unchanged" or "repaired".
 *
 * Only the credential that started the session may use it (403 otherwise); an unknown or committed
 * session is 404, an expired one 410 (and removed with its staged files). A credential has at most
 * MAX_OPEN_UPLOADS open sessions (providers.ts startSession: 429); expired ones are swept at each start.
 */

/** The handler behind `asPublisherOf(uploadSession)` for `PUT /v1/publish/uploads/:id/:filename`. */
export async function uploadFile(request: IRequest, env: Env, _ctx: ExecutionContext, { target }: Publisher<UploadTarget>): Promise<Response> {
  const { session } = target;
  const filename = target.filename!;
  const file = session.upload.files.find((f) => f.filename === filename);
  if (!file) throw new InputError(`${filename} is not one of the files this upload declared (${session.upload.files.map((f) => f.filename).join(', ')})`);
  if (file.content !== undefined)
    throw new InputError(`${filename} came with the manifest ("content"); it needs no upload: POST the commit_url once the other files are uploaded`);
  const parts = partCount(session, file);
  const partParam = new URL(request.url).searchParams.get('part');
  const part = partParam === null ? null : Number(partParam);
  if (part !== null && !(Number.isInteger(part) && part >= 1 && part <= parts)) throw new InputError(`part must be 1 to ${parts} for ${filename}`);
  if (part === null && parts > 1)
    throw new InputError(`${filename} is ${file.size} bytes: send it in ${parts} parts of ${session.partSize} bytes (?part=1 … ?part=${parts})`, 413);
  const expected = part === null ? file.size : partLength(session, file, part);
  const lengthHeader = request.headers.get('content-length');
  if (lengthHeader === null || !/^\d+$/.test(lengthHeader))
    return errorResponse(411, 'Content-Length is required: uploads are streamed to storage and must say their size');
  const length = Number(lengthHeader);
  if (length > MAX_BODY_BYTES) {
    throw new InputError(
      `the body is ${length} bytes; at most ${MAX_BODY_BYTES} are accepted per request (Cloudflare's limit): send ${filename} in the parts the upload session names (part_size ${session.partSize})`,
      413,
    );
  }
  if (length > expected) throw new InputError(`the body is ${length} bytes; ${filename}${part === null ? '' : ` part ${part}`} is ${expected} bytes`, 413);
  if (length < expected) throw new InputError(`the body is ${length} bytes; ${filename}${part === null ? '' : ` part ${part}`} is ${expected} bytes`);
  if (request.body === null) throw new InputError('the request has no body');
  if (part === null) await stageWholeFile(env.REGISTRY_R2, session, file, request.body);
  else await stagePart(env.REGISTRY_R2, session, file, part, request.body);
  return json({ filename, part: part ?? 1, size: length });
}

/** The handler behind `asPublisherOf(uploadSession)` for `POST /v1/publish/uploads/:id/commit`. */
export async function commitUpload(
  _request: IRequest,
  env: Env,
  ctx: ExecutionContext,
  { actor, store, ci, target }: Publisher<UploadTarget>,
): Promise<Response> {
  const { session } = target;
  // The statement states the committing job's verified claims (the same identity that started the session).
  const attest = attesterFor(actor, ci, settings(env), store.blobs);
  const result =
    session.upload.kind === 'provider'
      ? await commitProvider(store, session, actor, session.upload, settings(env).signingKeySecret, attest)
      : await commitModule(store, session, actor, session.upload, attest);
  const digests = Object.fromEntries(session.upload.files.map((f) => [f.filename, f.sha256]));
  const repaired =
    result.status === 'repaired' ? { reason: `repaired: restored ${session.upload.files.map((f) => f.filename).join(', ')} from the uploaded bytes` } : {};
  await audit(store, ctx, { ...auditTarget(session), actor, outcome: result.status === 'unchanged' ? 'unchanged' : 'ok', digests, ...repaired });
  // Staged copies are garbage now; removing them need not delay the answer.
  ctx.waitUntil(removeUpload(store.bucket as unknown as UploadBucket, session.id, session).catch(() => {}));
  return json(result);
}

async function sessionOf(request: IRequest, env: Env): Promise<UploadSession | Response> {
  const id = pathSegment(request.params.id, 'upload id');
  const session = await readUploadSession(publishStore(env).blobs, id);
  if (session === null) return errorResponse(404, `no upload ${id.slice(0, 64)}: it was committed, expired or never started; start the publish again`);
  return session;
}

function auditTarget(session: UploadSession): AuditTarget {
  const u = session.upload;
  return u.kind === 'provider'
    ? { action: 'provider.publish', target: `${session.hostname}/${session.namespace}/${u.type} ${u.version}` }
    : { action: 'module.publish', target: `${session.hostname}/${session.namespace}/${u.name}/${u.system} ${u.version}` };
}

/** An upload session's publish target: the session (the package and audit target are its), and the file of a PUT. */
export interface UploadTarget extends PublishTarget {
  session: UploadSession;
  filename: string | null;
}

/**
 * The guard's resolver (asPublisherOf) for `/v1/publish/uploads/:id/…`: 404 for an unknown session (before any
 * credential is looked at); the session's package and audit target; a CI token `continues` the publish it
 * started; `check`: only the credential that started the session (403), not past its expiry (410, and removed).
 */
export async function uploadSession(request: IRequest, env: Env, ctx: ExecutionContext): Promise<UploadTarget | Response> {
  const session = await sessionOf(request, env);
  if (session instanceof Response) return session;
  const filename = request.params.filename === undefined ? null : pathSegment(request.params.filename, 'filename');
  return {
    pkg:
      session.upload.kind === 'provider'
        ? { kind: 'provider', namespace: session.namespace, type: session.upload.type }
        : { kind: 'module', namespace: session.namespace, name: session.upload.name, system: session.upload.system },
    what: auditTarget(session),
    mode: 'continues',
    session,
    filename,
    check: (actor) => {
      if (!sameActor(actor, session.actor))
        throw new InputError('this upload was started with other credentials; only they may upload to it or commit it', 403);
      if (Date.parse(session.expires) <= Date.now()) {
        // Expiry is checked on use, and an expired session found this way goes at once (the sweep would later).
        ctx.waitUntil(removeUpload(env.REGISTRY_R2 as unknown as UploadBucket, session.id, session).catch(() => {}));
        throw new InputError(`this upload expired at ${session.expires}; start the publish again`, 410);
      }
    },
  };
}

/** Two actors are the same publisher: the same token, or the same CI token (issuer, subject, repository, jti: a CI token continues only the publish it started). */
function sameActor(a: Actor, b: Actor): boolean {
  if (a.kind === 'token' && b.kind === 'token') return a.tokenId === b.tokenId;
  if (a.kind === 'ci' && b.kind === 'ci') return a.issuer === b.issuer && a.subject === b.subject && a.repository === b.repository && a.jti === b.jti;
  if (a.kind === 'person' && b.kind === 'person') return a.issuer === b.issuer && a.subject === b.subject;
  return a.kind === 'operator' && b.kind === 'operator';
}
