/**
 * Who did a write: recorded in every audit entry (src/store/audit/) and
 * returned by request authentication (src/access/publish-auth.ts).
 *
 *   token     a stored `ert_` publish token; `tokenId` is its short public id
 *             (the first 12 hex digits of its SHA-256), never the token
 *   ci        a CI job's OIDC ID token matched against a trusted publisher
 *   person    someone signed in through OIDC (pages)
 *   operator  the CLI with the storage credentials: the local state, or
 *             Cloudflare's APIs with --remote
 */
export type Actor =
  | { kind: 'token'; tokenId: string; name: string }
  | { kind: 'ci'; issuer: string; subject: string; repository?: string; workflow?: string; ref?: string; runId?: string; environment?: string; jti?: string }
  | { kind: 'person'; issuer: string; subject: string; email?: string }
  | { kind: 'operator'; via: 'local' | 'remote' };

/** The operator actor of a CLI run: `remote` when it writes to Cloudflare (--remote). */
export function operatorActor(remote: boolean | undefined): Actor {
  return { kind: 'operator', via: remote ? 'remote' : 'local' };
}

/** One line naming an actor, for tables and logs (no secrets: actors never hold one). */
export function describeActor(actor: Actor): string {
  switch (actor.kind) {
    case 'token':
      return `token ${actor.tokenId}${actor.name ? ` (${actor.name})` : ''}`;
    case 'ci': {
      const parts = [actor.repository, actor.workflow, actor.ref, actor.environment && `env ${actor.environment}`, actor.runId && `run ${actor.runId}`].filter(
        Boolean,
      );
      return `ci ${actor.issuer} ${actor.subject}${parts.length ? ` [${parts.join(', ')}]` : ''}`;
    }
    case 'person':
      return `person ${actor.email ?? actor.subject} (${actor.issuer})`;
    case 'operator':
      return `operator via ${actor.via === 'remote' ? '--remote' : 'local state'}`;
  }
}

/**
 * Parses an actor read back from storage. Returns null (never throws) when
 * `value` is not one of the shapes above, so a damaged entry is reported as
 * such rather than failing a listing.
 */
export function parseActor(value: unknown): Actor | null {
  if (typeof value !== 'object' || value === null) return null;
  const a = value as Record<string, unknown>;
  const str = (v: unknown) => typeof v === 'string';
  const optional = (...keys: string[]) => keys.every((k) => a[k] === undefined || str(a[k]));
  switch (a.kind) {
    case 'token':
      return str(a.tokenId) && str(a.name) ? { kind: 'token', tokenId: a.tokenId as string, name: a.name as string } : null;
    case 'ci':
      return str(a.issuer) && str(a.subject) && optional('repository', 'workflow', 'ref', 'runId', 'environment', 'jti') ? (a as Actor) : null;
    case 'person':
      return str(a.issuer) && str(a.subject) && optional('email') ? (a as Actor) : null;
    case 'operator':
      return a.via === 'local' || a.via === 'remote' ? { kind: 'operator', via: a.via } : null;
    default:
      return null;
  }
}
