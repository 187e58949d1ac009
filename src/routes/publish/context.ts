import type { IRequest } from 'itty-router';
import { settings } from '../../config';
import type { Env } from '../../env';
import { refusalStatus } from '../../http/errors';
import { errorResponse } from '../../http/responses';
import type { Actor } from '../../store/audit/actor';
import { authorizePublisher, PublishRefusal } from '../../access/publish-auth';
import type { VerifiedCiToken } from '../../access/ci-token';
import type { PackageRef } from '../../access/scope';
import { auditRefusal } from './refusal-audit';
import { appendAuditEntry } from '../../store/audit/write';
import type { AuditAction } from '../../store/audit/entry';
import { storeFromEnv, type BlobStore, type KvStore } from '../../store/store';

/**
 * What every publish API handler shares: the store over the Worker's
 * bindings, authorisation, the audit entry of each outcome, and turning
 * refusals into responses (401/403 like the read API, InputError's 400/409/413
 * with the CLI's messages). Methods are the route table's (src/index.ts): 405 for others.
 */

export interface PublishStore {
  kv: KvStore;
  blobs: BlobStore;
  /** The R2 binding itself, for what BlobStore does not cover (ranges, multipart, checksums). */
  bucket: R2Bucket;
}

export function publishStore(env: Env): PublishStore {
  return { ...storeFromEnv(env), bucket: env.REGISTRY_R2 };
}

/**
 * The largest request body Cloudflare lets through to a Worker on Free and Pro zones: "100 MB", read as
 * 100,000,000 bytes (the stricter reading; a bigger body is answered 413 by Cloudflare before the Worker runs).
 * The Worker refuses above it too, so a body over it meets the Worker's own 413 message locally and the same
 * limit in production. Bigger files go in parts.
 */
export const MAX_BODY_BYTES = 100_000_000;
/** Size of every part but the last of a file sent in parts (R2 wants them equal, ≥ 5 MiB; 67,108,864 bytes: under MAX_BODY_BYTES). */
export const PART_BYTES = 64 * 1024 * 1024;

/** A JSON response that is never cached. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });
}

export interface AuditTarget {
  action: AuditAction;
  target: string;
}

/**
 * Runs `handle` for an authorised actor: authorises the request to write
 * `pkg` (publish-auth.ts: the credential's packages must include it), then answers what `handle` returns. A refused credential
 * answers 401/403 (WWW-Authenticate on 401), a refusal (InputError, a
 * StoreRefusal) its status (src/http/errors.ts) and message; both leave an audit entry `refused` when the caller is known
 * (a token id, a CI job's claims), a refused credential's rate-limited per class (refusal-audit.ts). Other errors propagate (500, logged).
 */
export async function asPublisher(
  request: IRequest,
  env: Env,
  ctx: ExecutionContext,
  pkg: PackageRef,
  what: AuditTarget,
  handle: (actor: Actor, store: PublishStore, ci: VerifiedCiToken | null) => Promise<Response>,
  /** 'continues' for an upload session's requests: a CI token starts one publish (publish-auth.ts), and these continue it. */
  mode: 'starts' | 'continues' = 'starts',
): Promise<Response> {
  const store = publishStore(env);
  let actor: Actor | null = null;
  try {
    const authorization = await authorizePublisher(request, settings(env), store, pkg, mode === 'starts' ? `${what.action} ${what.target}` : null);
    actor = authorization.actor;
    return await handle(actor, store, authorization.ci);
  } catch (error) {
    if (error instanceof PublishRefusal) {
      if (error.claimed) {
        // Anyone can mint CI tokens (forged, or genuine for their own repository) and resend a leaked ert_ token without limit: refusals are rate-limited.
        const kind = error.claimed.kind === 'ci' ? (error.verified ? 'verified' : 'unverified') : 'token';
        await auditRefusal(env, ctx, kind, { ...what, actor: error.claimed, reason: error.message }, (entry) =>
          audit(store, ctx, { ...entry, outcome: 'refused' }),
        );
      }
      const challenge = error.challenge;
      return errorResponse(error.status, error.message, challenge ? { 'www-authenticate': challenge } : {});
    }
    const status = refusalStatus(error);
    if (status !== null) {
      const reason = (error as Error).message;
      if (actor) await audit(store, ctx, { ...what, actor, outcome: 'refused', reason });
      return errorResponse(status, reason);
    }
    if (actor) await audit(store, ctx, { ...what, actor, outcome: 'failed', reason: String((error as Error)?.message ?? error) });
    throw error;
  }
}

/**
 * What a publish route writes, worked out from the request before any credential is looked at: the package
 * its credential must have rights to, the audit target of every outcome, whether a CI token `starts` a publish
 * (the default) or `continues` one (an upload session's requests), and `check`, run on the authorised actor
 * inside asPublisher (its refusals audited like the handler's). A resolver answers a Response (e.g. 404 for an
 * unknown upload) or throws InputError (400, not audited: no caller is known yet) for a bad path.
 */
export interface PublishTarget {
  pkg: PackageRef;
  what: AuditTarget;
  mode?: 'starts' | 'continues';
  check?: (actor: Actor) => void;
}

/** What a guarded publish handler is given: the authorised actor, the store, a CI token's verified claims, and the resolved target. */
export interface Publisher<T extends PublishTarget> {
  actor: Actor;
  store: PublishStore;
  ci: VerifiedCiToken | null;
  target: T;
}

/**
 * The publish API's guard, as it reads in the route table (src/index.ts): `asPublisherOf(resolve, handler)`
 * resolves the request's target (`resolve`), then runs `handler` through asPublisher for that target's package,
 * so every answer, refusal and audit entry is asPublisher's (above). `resolve`'s own Response or InputError is
 * answered as is, before any authorisation.
 */
export function asPublisherOf<T extends PublishTarget>(
  resolve: (request: IRequest, env: Env, ctx: ExecutionContext) => Promise<T | Response> | T | Response,
  handler: (request: IRequest, env: Env, ctx: ExecutionContext, publisher: Publisher<T>) => Promise<Response>,
): (request: IRequest, env: Env, ctx: ExecutionContext) => Promise<Response> {
  return async (request, env, ctx) => {
    const target = await resolve(request, env, ctx);
    if (target instanceof Response) return target;
    return asPublisher(
      request,
      env,
      ctx,
      target.pkg,
      target.what,
      async (actor, store, ci) => {
        target.check?.(actor);
        return handler(request, env, ctx, { actor, store, ci, target });
      },
      target.mode,
    );
  };
}

/** Appends an audit entry; a failure to write it is logged, never turned into a failed publish. */
export async function audit(
  store: PublishStore,
  _ctx: ExecutionContext,
  entry: AuditTarget & { actor: Actor; outcome: 'ok' | 'unchanged' | 'refused' | 'failed'; reason?: string; digests?: Record<string, string> },
): Promise<void> {
  try {
    await appendAuditEntry(store, entry);
  } catch (error) {
    console.error(`audit entry for ${entry.action} ${entry.target} not written: ${(error as Error)?.message ?? error}`);
  }
}

/** Reads a JSON request body of at most `limit` bytes (src/http/body.ts: 413 beyond it, while the body streams; 400 when not JSON). */
export { readJsonAtMost as readJsonBody } from '../../http/body';
