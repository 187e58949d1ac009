/**
 * A namespace's trusted publisher as stored (src/store/publishers/), and the
 * parser of the stored list. What the fields mean and how they are matched:
 * src/access/publishers.ts and ci-claims.ts.
 */

/** Decimal ids as GitHub and GitLab issue them (repository_id, project_id, …). */
export const NUMERIC_ID = /^[1-9][0-9]{0,19}$/;

export interface PublisherCommon {
  /** Short public id: the first 12 hex digits of the SHA-256 of the matching fields (so the same publisher is never added twice). */
  id: string;
  /** Canonical issuer URL; the token's `iss` must equal it. */
  issuer: string;
  /** Full git ref pattern (`refs/tags/v*`); absent = any ref. */
  ref?: string;
  /** Deployment environment the job must run in; absent = any (or none). */
  environment?: string;
  /** ISO 8601 time it was added. */
  created: string;
  /** The operator allowed any ref and any environment (--any-ref); else a new publisher names a ref or an environment. */
  anyRef?: true;
  /**
   * The packages it may publish and change: NS/TYPE and NS/NAME/SYSTEM patterns of its namespace
   * (src/access/scope.ts). Absent with no `namespaceWide`: stored before per-package rights, it publishes nothing.
   */
  packages?: string[];
  /** The operator allowed every package of the namespace explicitly (--namespace-wide). */
  namespaceWide?: true;
}

export interface GitHubPublisher extends PublisherCommon {
  kind: 'github';
  /** OWNER/REPO as given (compared case-insensitively, as GitHub names are). */
  repository: string;
  /** Workflow file name under .github/workflows/ (`release.yml`), or a reusable workflow of another repository as
   *  OWNER/REPO/.github/workflows/FILE[@REF]; absent (only publishers stored before it was required) = any workflow. */
  workflow?: string;
  /** `repository_id` (decimal); absent only on publishers stored before ids were required (they publish nothing until `publisher pin`). */
  repositoryId?: string;
  /** `repository_owner_id` (decimal); present whenever repositoryId is. */
  ownerId?: string;
}

export interface GitLabPublisher extends PublisherCommon {
  kind: 'gitlab';
  /** GROUP[/SUBGROUP…]/PROJECT (compared case-insensitively). */
  projectPath: string;
  /** `project_id` (decimal); absent only on publishers stored before ids were required (they publish nothing until `publisher pin`). */
  projectId?: string;
  /** `namespace_id` (decimal); present whenever projectId is. */
  namespaceId?: string;
  /** Accept tokens whose `ref_protected` is not "true" (--allow-unprotected-ref); else only protected branches and tags publish. */
  allowUnprotectedRef?: true;
}

export type TrustedPublisher = GitHubPublisher | GitLabPublisher;

/**
 * Parses a namespace's stored list. Returns only well-formed entries (never
 * throws), so a damaged entry makes that publisher match nothing rather than
 * failing every publish.
 */
export function parsePublisherList(text: string | null): TrustedPublisher[] {
  if (text === null) return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(value)) return [];
  return value.filter(isPublisher);
}

function isPublisher(value: unknown): value is TrustedPublisher {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  const str = (v: unknown) => typeof v === 'string' && v.length > 0;
  const optional = (v: unknown) => v === undefined || str(v);
  const ids = (a: unknown, b: unknown) =>
    (a === undefined && b === undefined) || (str(a) && str(b) && NUMERIC_ID.test(a as string) && NUMERIC_ID.test(b as string));
  const flag = (v: unknown) => v === undefined || v === true;
  const packages = p.packages === undefined || (Array.isArray(p.packages) && p.packages.length > 0 && p.packages.every(str));
  if (!str(p.id) || !str(p.issuer) || !str(p.created) || !optional(p.ref) || !optional(p.environment) || !flag(p.anyRef)) return false;
  if (!packages || !flag(p.namespaceWide)) return false;
  if (p.kind === 'github') return str(p.repository) && optional(p.workflow) && ids(p.repositoryId, p.ownerId);
  if (p.kind === 'gitlab') return str(p.projectPath) && ids(p.projectId, p.namespaceId) && flag(p.allowUnprotectedRef);
  return false;
}
