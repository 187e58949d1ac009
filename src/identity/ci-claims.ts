import { refMatches, type GitHubPublisher, type GitLabPublisher, type TrustedPublisher } from './publishers';

/**
 * Matching a verified CI ID token's claims against a namespace's trusted
 * publishers (see publishers.ts for what each kind checks), and the audit
 * actor the token stands for. Claim names are the CIs' own:
 *
 *   GitHub Actions  repository, workflow_ref / job_workflow_ref
 *                   (OWNER/REPO/.github/workflows/FILE@REF), ref, environment,
 *                   run_id, run_attempt
 *   GitLab CI       project_path, ref_type + ref, environment, pipeline_id, job_id
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
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value : undefined);
const idText = (value: unknown): string | undefined => (typeof value === 'number' && Number.isFinite(value) ? String(value) : text(value));

/** The first publisher of `publishers` (all of one namespace) whose conditions the claims meet; null when none does. */
export function matchingPublisher(claims: CiClaims, publishers: readonly TrustedPublisher[]): TrustedPublisher | null {
  return publishers.find((p) => p.issuer === claims.iss && (p.kind === 'github' ? matchesGitHub(p, claims) : matchesGitLab(p, claims))) ?? null;
}

function matchesGitHub(p: GitHubPublisher, claims: CiClaims): boolean {
  const repository = text(claims.repository);
  if (!repository || repository.toLowerCase() !== p.repository.toLowerCase()) return false;
  if (p.workflow) {
    // The workflow the run started from, or (a reusable workflow) the one this job runs; either must be a file of this repository.
    const files = [claims.workflow_ref, claims.job_workflow_ref].map((ref) => workflowFile(text(ref), p.repository));
    if (!files.includes(p.workflow)) return false;
  }
  if (p.ref && !refMatches(p.ref, text(claims.ref) ?? '')) return false;
  return environmentMatches(p, claims);
}

function matchesGitLab(p: GitLabPublisher, claims: CiClaims): boolean {
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
    }
    : {
      repository: text(claims.repository),
      workflow: text(claims.job_workflow_ref) ?? text(claims.workflow_ref),
      ref: text(claims.ref),
      runId: [idText(claims.run_id), idText(claims.run_attempt)].filter(Boolean).join('/') || undefined,
      environment: text(claims.environment),
    };
  const actor: CiActor = { kind: 'ci', issuer: text(claims.iss) ?? '', subject: text(claims.sub) ?? '' };
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) (actor as unknown as Record<string, unknown>)[key] = value.slice(0, 512);
  return actor;
}
