import { constantTimeEqualText } from './crypto/bytes';
import { tokenId, tokenSha256 } from './tokens';
import { tokenKey } from '../store/layout';
import { appendAuditEntry } from '../store/audit/write';
import { readPublishers } from '../store/publishers/read';
import { claimTokenUse } from '../store/publishers/token-uses';
import { writePublishers } from '../store/publishers/write';
import { parseTokenRecord } from '../store/tokens/read';
import type { BlobStore, KvStore } from '../store/store';
import type { Actor } from '../store/audit/actor';
import { presentedIds, type CiClaims } from './ci-claims';
import { CiTokenError, looksLikeJwt, verifyCiToken, type VerifiedCiToken } from './ci-token';
import { describePublisher, type TrustedPublisher } from './publishers';

/**
 * Who may write through the publish API (src/routes/publish/): a request
 * carries `Authorization: Bearer CREDENTIAL`, either
 *   - a publish token `ert_…` (`npm run token -- create --publish NS`): its
 *     record is read by the token's SHA-256 (uncached, so a revocation takes
 *     effect on the next request), the hash compared in constant time, the
 *     expiry checked, and one of its scopes must be the namespace or "*";
 *     a read token never publishes;
 *   - a CI job's OIDC ID token (a JWT): verified and matched against the
 *     namespace's trusted publishers by src/access/ci-token.ts; a token
 *     starts one publish (`starts`: its `jti` is recorded in R2 until it
 *     expires, src/store/publishers/token-uses.ts), and the first publish a
 *     publisher stored before ids were pinned allows pins the ids the token
 *     presented (an audit entry `publisher.pin` says so).
 * Statuses as the read API: 401 (with WWW-Authenticate) for missing,
 * malformed, unknown, revoked, expired or unverifiable credentials; 403 for
 * valid credentials that may not publish into this namespace.
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
 * Authorises `request` to publish into `namespace` (lower case, already
 * validated) of this registry (`config.hostname`). `starts` names what the
 * request starts (`provider.publish HOST/NS/TYPE VERSION`), or is null when
 * it continues an upload session (whose route checks the token's `jti` is the
 * one that started it). Resolves with the actor for the audit log and, for a CI job, the verified token (build provenance states only its claims); throws
 * PublishRefusal (401/403, 503 when a CI issuer cannot be reached) otherwise,
 * 401 for a CI token that already started another publish. Never throws
 * anything else for bad input. Cost: one KV read (publish token) or one KV
 * read, the issuer's cached keys and one R2 create-only put (CI token).
 */
export async function authorizePublisher(
  request: Request,
  config: { hostname: string },
  store: { kv: KvStore; blobs: BlobStore },
  namespace: string,
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
  if (PUBLISH_TOKEN.test(credential)) return { actor: await publishTokenActor(credential, store.kv, namespace, now), ci: null };
  if (looksLikeJwt(credential)) {
    const ci = await ciTokenActor(credential, config, store, namespace, starts, now);
    return { actor: ci.actor, ci };
  }
  throw new PublishRefusal(401, 'the bearer credential is neither a token of this registry (ert_…) nor a CI ID token (a JWT)', null, 'invalid_token');
}

async function publishTokenActor(token: string, kv: KvStore, namespace: string, now: Date): Promise<Actor> {
  const hash = tokenSha256(token);
  const text = await kv.get(tokenKey(hash), 'text');
  const record = text === null ? null : parseTokenRecord(text);
  if (record === null || !constantTimeEqualText(record.sha256, hash)) {
    throw new PublishRefusal(401, 'the token is not valid: unknown or revoked', null, 'invalid_token');
  }
  const actor: Actor = { kind: 'token', tokenId: tokenId(hash), name: record.name };
  if (record.expires !== null && Date.parse(record.expires) <= now.getTime()) {
    throw new PublishRefusal(401, `the token expired at ${record.expires}`, actor, 'invalid_token');
  }
  if (record.purpose !== 'publish') {
    throw new PublishRefusal(403, 'this is a read token: it never publishes; create a publish token with npm run token -- create --publish NS', actor);
  }
  if (!record.scopes.some((scope) => scope === '*' || scope === namespace)) {
    throw new PublishRefusal(403, `this publish token may not publish into namespace "${namespace}"; its namespaces: ${record.scopes.join(', ')}`, actor);
  }
  return actor;
}

// CI ID tokens: verification and publisher matching are src/access/ci-token.ts's (the trusted-publishers work).
async function ciTokenActor(
  token: string,
  config: { hostname: string },
  store: { kv: KvStore; blobs: BlobStore },
  namespace: string,
  starts: string | null,
  now: Date,
): Promise<VerifiedCiToken> {
  const publishers = await readPublishers(store.kv, config.hostname, namespace);
  let verified;
  try {
    verified = await verifyCiToken(token, { namespace, publishers, hostname: config.hostname, now });
  } catch (error) {
    if (!(error instanceof CiTokenError)) throw error;
    const status = error.reason === 'no-publisher' ? 403 : error.reason === 'issuer-unavailable' ? 503 : 401;
    throw new PublishRefusal(status, error.message, error.claimed, status === 401 ? 'invalid_token' : undefined);
  }
  const { claims, actor, publisher } = verified;
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
    await pinIds(store, config.hostname, namespace, publisher, claims, actor);
  }
  return verified;
}

/**
 * A publisher stored before ids were pinned matched on names: pin the ids the
 * token presented (re-reading the list, so a concurrent edit is kept) and
 * audit it. From then on only that repository or project, by id, matches.
 * A failure to pin is logged, not a failed publish (the next publish pins).
 */
async function pinIds(
  store: { kv: KvStore; blobs: BlobStore },
  hostname: string,
  namespace: string,
  publisher: TrustedPublisher,
  claims: CiClaims,
  actor: Actor,
): Promise<void> {
  if (publisher.kind === 'github' ? publisher.repositoryId !== undefined : publisher.projectId !== undefined) return;
  const ids = presentedIds(claims, publisher.kind);
  if (!ids) return;
  try {
    const current = await readPublishers(store.kv, hostname, namespace);
    let pinned: TrustedPublisher | null = null;
    const updated = current.map((p) => {
      if (p.id !== publisher.id) return p;
      pinned = p.kind === 'github' ? { ...p, repositoryId: ids.id, ownerId: ids.ownerId } : { ...p, projectId: ids.id, namespaceId: ids.ownerId };
      return pinned;
    });
    if (pinned === null) return;
    await writePublishers(store.kv, hostname, namespace, updated);
    await appendAuditEntry(store, {
      action: 'publisher.pin',
      target: `${hostname}/${namespace}`,
      actor,
      outcome: 'ok',
      reason: `pinned by its first publish to the ids its token presented: ${describePublisher(pinned).replace(/\s+/g, ' ')}`,
    });
  } catch (error) {
    console.error(`publisher ${publisher.id} of ${hostname}/${namespace} not pinned: ${(error as Error)?.message ?? error}`);
  }
}
