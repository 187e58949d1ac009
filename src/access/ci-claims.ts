import { refMatches, type GitHubPublisher, type GitLabPublisher, type TrustedPublisher } from './publishers';

/**
 * Matching a verified CI ID token's claims against a namespace's trusted
 * publishers (see publishers.ts for what each kind checks), and the audit
 * actor the token stands for. Claim names are the CIs' own:
 *
 *   GitHub Actions  repository_id, repository_owner_id, repository,
 *                   workflow_ref / job_workflow_ref
 *                   (OWNER/REPO/.github/workflows/FILE@REF), ref, environment,
 *                   run_id, run_attempt
 *   GitLab CI       project_id, namespace_id, project_path, ref_type + ref,
 *                   ref_protected, environment, pipeline_id, job_id
 *
 * Ids are compared first: a name can be freed and registered again, an id
 * never moves. A publisher stored before ids were required (none stored)
 * matches on names here only so that the refusal can name it: ci-token.ts
 * refuses it until the operator pins it (publishers.ts unpinnedReason).
 *
 * The signature, `iss`, `aud` and the times are checked before (ci-token.ts).
 */

export type CiClaims = Record<string, unknown>;

/** The audit actor of a CI job (the `ci` shape of src/store/audit/actor.ts's Actor). */
export interface CiActor {
  kind: 'ci';
  issuer: string;
  subject: string;
  repository?: string;
  workflow?: string;
  ref?: string;
  runId?: string;
  environment?: string;
  /** The token's `jti`: a token starts one publish, and only its uploads and commit continue it. */
  jti?: string;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value : undefined);
const idText = (value: unknown): string | undefined => (typeof value === 'number' && Number.isFinite(value) ? String(value) : text(value));

/** Every publisher of `publishers` (all of one namespace) whose conditions the claims meet, in stored order (the package rights are checked after, by ci-token.ts). */
export function matchingPublishers(claims: CiClaims, publishers: readonly TrustedPublisher[]): TrustedPublisher[] {
  return publishers.filter((p) => p.issuer === claims.iss && (p.kind === 'github' ? matchesGitHub(p, claims) : matchesGitLab(p, claims)));
}

/** The ids a verified token presents for its repository or project (decimal strings); undefined when it carries none. */
export function presentedIds(claims: CiClaims, kind: TrustedPublisher['kind']): { id: string; ownerId: string } | undefined {
  const id = idText(kind === 'github' ? claims.repository_id : claims.project_id);
  const ownerId = idText(kind === 'github' ? claims.repository_owner_id : claims.namespace_id);
  return id && ownerId ? { id, ownerId } : undefined;
}

/** True when the publisher is pinned to ids and the token presents exactly those (both: a transferred repository keeps its id, not its owner's). */
function idsMatch(p: TrustedPublisher, claims: CiClaims): boolean {
  const pinned = p.kind === 'github' ? { id: p.repositoryId, ownerId: p.ownerId } : { id: p.projectId, ownerId: p.namespaceId };
  if (pinned.id === undefined) return true; // stored before ids were required: matched by names, then refused as unpinned (ci-token.ts)
  const presented = presentedIds(claims, p.kind);
  return presented !== undefined && presented.id === pinned.id && presented.ownerId === pinned.ownerId;
}

/** True when the publisher's names match the claims but its pinned ids do not: a recreated or transferred repository (for the refusal message). */
export function namesMatchButIdsDiffer(p: TrustedPublisher, claims: CiClaims): boolean {
  const name = text(p.kind === 'github' ? claims.repository : claims.project_path);
  const wanted = p.kind === 'github' ? p.repository : p.projectPath;
  return name !== undefined && name.toLowerCase() === wanted.toLowerCase() && !idsMatch(p, claims);
}

function matchesGitHub(p: GitHubPublisher, claims: CiClaims): boolean {
  if (!idsMatch(p, claims)) return false;
  const repository = text(claims.repository);
  if (!repository || repository.toLowerCase() !== p.repository.toLowerCase()) return false;
  if (p.workflow) {
    // The workflow the run started from, or (a reusable workflow) the one this job runs: a file of this repository,
    // or the reusable workflow of another repository the publisher names in full.
    if (!workflowMatches(p.workflow, p.repository, [text(claims.workflow_ref), text(claims.job_workflow_ref)])) return false;
  }
  if (p.ref && !refMatches(p.ref, text(claims.ref) ?? '')) return false;
  return environmentMatches(p, claims);
}

function matchesGitLab(p: GitLabPublisher, claims: CiClaims): boolean {
  if (!idsMatch(p, claims)) return false;
  // Any Developer can push an unprotected branch or tag: only protected refs publish unless the operator allowed otherwise.
  if (!p.allowUnprotectedRef && claims.ref_protected !== 'true' && claims.ref_protected !== true) return false;
  const path = text(claims.project_path);
  if (!path || path.toLowerCase() !== p.projectPath.toLowerCase()) return false;
  if (p.ref) {
    const ref = gitLabFullRef(claims);
    if (!ref || !refMatches(p.ref, ref)) return false;
  }
  return environmentMatches(p, claims);
}

function environmentMatches(p: TrustedPublisher, claims: CiClaims): boolean {
  if (!p.environment) return true;
  const environment = text(claims.environment);
  return environment !== undefined && environment.toLowerCase() === p.environment.toLowerCase();
}

/**
 * True when one of `refs` (workflow_ref, job_workflow_ref) runs the
 * publisher's workflow: FILE of `repository`, or the reusable workflow
 * OWNER/REPO/.github/workflows/FILE (any ref) or …FILE@REF (that ref) it names.
 */
export function workflowMatches(workflow: string, repository: string, refs: readonly (string | undefined)[]): boolean {
  if (!workflow.includes('/')) return refs.some((ref) => workflowFile(ref, repository) === workflow);
  const wanted = workflow.toLowerCase();
  return refs.some((ref) => {
    if (!ref) return false;
    const at = ref.indexOf('@');
    if (at < 0) return false;
    // Owner and repository names are case-insensitive on GitHub; the file name and the ref are compared as given.
    const path = ref.slice(0, at);
    const [owner, repo, ...rest] = path.split('/');
    const [wOwner, wRepo, ...wRest] = workflow.split('@')[0]!.split('/');
    const samePath = owner?.toLowerCase() === wOwner?.toLowerCase() && repo?.toLowerCase() === wRepo?.toLowerCase() && rest.join('/') === wRest.join('/');
    return samePath && (wanted.includes('@') ? ref.slice(at) === workflow.slice(workflow.indexOf('@')) : true);
  });
}

/** FILE of `OWNER/REPO/.github/workflows/FILE@REF` when OWNER/REPO is `repository` (case-insensitively); undefined otherwise. */
export function workflowFile(workflowRef: string | undefined, repository: string): string | undefined {
  const match = workflowRef ? /^([^/]+\/[^/]+)\/\.github\/workflows\/([^/@]+)@.+$/.exec(workflowRef) : null;
  return match && match[1]!.toLowerCase() === repository.toLowerCase() ? match[2] : undefined;
}

/** GitLab's `ref` as a full git ref (`refs/tags/v1.2.3`, `refs/heads/main`) from `ref_type`; undefined when it can't be told. */
export function gitLabFullRef(claims: CiClaims): string | undefined {
  const ref = text(claims.ref);
  if (!ref) return undefined;
  if (claims.ref_type === 'tag') return `refs/tags/${ref}`;
  if (claims.ref_type === 'branch') return `refs/heads/${ref}`;
  return undefined;
}

/** The audit actor of a verified token (issuer, subject and what the CI says about the run; never the token). */
export function ciActor(claims: CiClaims, publisher: TrustedPublisher | null): CiActor {
  const gitlab = publisher ? publisher.kind === 'gitlab' : text(claims.project_path) !== undefined;
  const fields = gitlab
    ? {
        repository: text(claims.project_path),
        workflow: text(claims.ci_config_ref_uri),
        ref: gitLabFullRef(claims) ?? text(claims.ref),
        runId: [idText(claims.pipeline_id), idText(claims.job_id)].filter(Boolean).join('/') || undefined,
        environment: text(claims.environment),
        jti: text(claims.jti),
      }
    : {
        repository: text(claims.repository),
        workflow: text(claims.job_workflow_ref) ?? text(claims.workflow_ref),
        ref: text(claims.ref),
        runId: [idText(claims.run_id), idText(claims.run_attempt)].filter(Boolean).join('/') || undefined,
        environment: text(claims.environment),
        jti: text(claims.jti),
      };
  const actor: CiActor = { kind: 'ci', issuer: text(claims.iss) ?? '', subject: text(claims.sub) ?? '' };
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) (actor as unknown as Record<string, unknown>)[key] = value.slice(0, 512);
  return actor;
}
