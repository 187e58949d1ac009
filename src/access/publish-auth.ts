import { checkTokenRecord, tokenId, tokenSha256 } from './tokens';
import { tokenKey } from '../store/layout';
import { parseTokenRecord } from '../store/tokens/read';
import { readPublishers } from '../store/publishers/read';
import { claimTokenUse } from '../store/publishers/token-uses';
import type { BlobStore, KvStore } from '../store/store';
import type { Actor } from '../store/audit/actor';
import { CiTokenError, looksLikeJwt, verifyCiToken, type VerifiedCiToken } from './ci-token';
import { describeRights, packageName, rightsAllow, rightsEmpty, tokenRights, type PackageRef } from './scope';

/**
 * Who may write through the publish API (src/routes/publish/): a request
 * carries `Authorization: Bearer CREDENTIAL`, either
 *   - a publish token `ert_…` (`npm run token -- create --publish NS`): its
 *     record is read by the token's SHA-256 (uncached KV: a revocation
 *     reaches every location within KV's 60 s), the hash compared in
 *     constant time, the expiry checked, and its packages (or, created
 *     --namespace-wide, its namespaces) must include the package written
 *     (src/access/scope.ts); a read token never publishes;
 *   - a CI job's OIDC ID token (a JWT): verified and matched against the
 *     namespace's trusted publishers (read from R2, strongly consistent) by
 *     src/access/ci-token.ts, which also checks the publisher's packages; a
 *     token starts one publish (`starts`: its `jti` is recorded in R2 until
 *     it expires, src/store/publishers/token-uses.ts). Nothing is written
 *     back: a publisher stored without ids is refused until the operator
 *     pins it, never pinned from a token.
 * Statuses as the read API: 401 (with WWW-Authenticate) for missing,
 * malformed, unknown, revoked, expired or unverifiable credentials; 403 for
 * valid credentials that may not write this package.
 */

export type PublishRefusalStatus = 401 | 403 | 503;

/** A refused publish credential: the status and message the edge answers with, and who the credential claims to be (for the audit entry). */
export class PublishRefusal extends Error {
  constructor(
    readonly status: PublishRefusalStatus,
    message: string,
    /** What the caller claims to be (a token id, a CI job); null when unknown. Unverified unless status is 403. */
    readonly claimed: Actor | null,
    /** RFC 6750 error code for WWW-Authenticate (401 only). */
    readonly error?: 'invalid_token',
    /** The credential verified (its `claimed` actor is who it is): a CI token no publisher allows, or one already used. */
    readonly verified = status === 403,
  ) {
    super(message);
    this.name = 'PublishRefusal';
  }

  /** The WWW-Authenticate challenge of a 401, else null. */
  get challenge(): string | null {
    if (this.status !== 401) return null;
    return this.error ? `Bearer realm="edge-registry", error="${this.error}"` : 'Bearer realm="edge-registry"';
  }
}

const PUBLISH_TOKEN = /^ert_[A-Za-z0-9_-]{43}$/;

/** What authorised a publish: the actor, and for a CI job the verified token (claims and the publisher rule they matched), else null. */
export interface PublishAuthorization {
  actor: Actor;
  ci: VerifiedCiToken | null;
}

/**
 * Authorises `request` to publish or change `pkg` (lower case, already
 * validated) of this registry (`config.hostname`): a publish, an upload
 * session's requests, a lifecycle change. `starts` names what the
 * request starts (`provider.publish HOST/NS/TYPE VERSION`), or is null when
 * it continues an upload session (whose route checks the token's `jti` is the
 * one that started it). Resolves with the actor for the audit log and, for a CI job, the verified token (build provenance states only its claims); throws
 * PublishRefusal (401/403, 503 when a CI issuer cannot be reached) otherwise,
 * 401 for a CI token that already started another publish. Never throws
 * anything else for bad input. Cost: one KV read (publish token) or one or
 * two R2 reads (+1 KV read for a list not yet moved to R2), the issuer's
 * cached keys and one R2 create-only put (CI token).
 */
export async function authorizePublisher(
  request: Request,
  config: { hostname: string },
  store: { kv: KvStore; blobs: BlobStore },
  pkg: PackageRef,
  starts: string | null,
  now = new Date(),
): Promise<PublishAuthorization> {
  const header = request.headers.get('authorization');
  if (header === null || header.trim() === '') {
    throw new PublishRefusal(
      401,
      "publishing needs credentials: a publish token (npm run token -- create --publish NS; EDGE_REGISTRY_TOKEN) or a CI job's OIDC ID token of a trusted publisher",
      null,
    );
  }
  const match = /^\s*bearer +(\S+)\s*$/i.exec(header);
  const credential = match?.[1];
  if (credential === undefined) {
    throw new PublishRefusal(401, 'the Authorization header is not "Bearer <publish token or CI ID token>"', null, 'invalid_token');
  }
  if (PUBLISH_TOKEN.test(credential)) return { actor: await publishTokenActor(credential, store.kv, pkg, config.hostname, now), ci: null };
  if (looksLikeJwt(credential)) {
    const ci = await ciTokenActor(credential, config, store, pkg, starts, now);
    return { actor: ci.actor, ci };
  }
  throw new PublishRefusal(401, 'the bearer credential is neither a token of this registry (ert_…) nor a CI ID token (a JWT)', null, 'invalid_token');
}

async function publishTokenActor(token: string, kv: KvStore, pkg: PackageRef, hostname: string, now: Date): Promise<Actor> {
  const hash = tokenSha256(token);
  // Uncached: a publish sees a revocation as soon as KV does (the read path keeps records up to 30 s).
  const text = await kv.get(tokenKey(hash), 'text');
  const check = checkTokenRecord(text === null ? null : parseTokenRecord(text), hash, 'publish', now.getTime());
  if (!check.ok && check.record === null) throw new PublishRefusal(401, check.message, null, 'invalid_token');
  const record = check.record!;
  const actor: Actor = { kind: 'token', tokenId: tokenId(hash), name: record.name };
  if (!check.ok)
    throw check.reason === 'expired' ? new PublishRefusal(401, check.message, actor, 'invalid_token') : new PublishRefusal(403, check.message, actor);
  const rights = tokenRights(record);
  if (rightsEmpty(rights)) {
    throw new PublishRefusal(
      403,
      `this publish token (${actor.tokenId}) was created before publish rights were per package and publishes nothing: create one for the packages it publishes ` +
        `(npm run token -- create --publish ${packageName(pkg)}) and revoke this one (npm run token -- revoke ${actor.tokenId})`,
      actor,
    );
  }
  if (!rightsAllow(rights, pkg, hostname)) {
    throw new PublishRefusal(403, `this publish token may not publish or change ${packageName(pkg)}; it may: ${describeRights(rights)}`, actor);
  }
  return actor;
}

// CI ID tokens: verification and publisher matching are src/access/ci-token.ts's (the trusted-publishers work).
async function ciTokenActor(
  token: string,
  config: { hostname: string },
  store: { kv: KvStore; blobs: BlobStore },
  pkg: PackageRef,
  starts: string | null,
  now: Date,
): Promise<VerifiedCiToken> {
  const publishers = await readPublishers(store, config.hostname, pkg.namespace);
  let verified;
  try {
    verified = await verifyCiToken(token, { namespace: pkg.namespace, pkg, publishers, hostname: config.hostname, now });
  } catch (error) {
    if (!(error instanceof CiTokenError)) throw error;
    const status = error.reason === 'no-publisher' ? 403 : error.reason === 'issuer-unavailable' ? 503 : 401;
    throw new PublishRefusal(status, error.message, error.claimed, status === 401 ? 'invalid_token' : undefined);
  }
  const { claims, actor } = verified;
  if (starts !== null) {
    // jti and exp are required claims (ci-token.ts).
    const earlier = await claimTokenUse(
      store.blobs,
      config.hostname,
      { issuer: actor.issuer, jti: String(claims.jti), expires: new Date(Number(claims.exp) * 1000) },
      starts,
      now,
    );
    if (earlier !== null) {
      throw new PublishRefusal(
        401,
        `this CI ID token already started ${earlier.started}${earlier.time ? ` at ${earlier.time}` : ''}; a token starts one publish: request a fresh one for this one`,
        actor,
        'invalid_token',
        true,
      );
    }
  }
  return verified;
}
