import type { CiClaims } from '../access/ci-claims';
import type { TrustedPublisher } from '../access/publishers';
import type { BuildSummary } from '../store/provenance';
export type { BuildSummary };

/**
 * The statements the registry signs for a release (docs/provenance.md):
 *
 *   build provenance   an in-toto Statement v1 with predicate SLSA Provenance
 *                      v1, for a release published by a trusted CI job; every
 *                      field comes from the CI ID token the registry verified
 *                      (src/access/ci-token.ts) and from the registry's own
 *                      facts (time, the publisher rule that matched) — never
 *                      from anything the uploader sent.
 *   publish attestation  a smaller Statement for a release published with a
 *                      token or the CLI: who (the actor kind) and when; its
 *                      predicate type says it is not build provenance.
 *
 * Subjects are the published files with their SHA-256 (each zip and
 * SHA256SUMS of a provider; the package of a module). File names alone do
 * not say which package they belong to (acme/thing and evil/thing ship the
 * same names), so both statements also name the package: its full address
 * (HOST/NS/TYPE, or HOST/NS/NAME/SYSTEM for a module) and version — build
 * provenance in `predicate.buildDefinition.internalParameters.registry.package`,
 * the publish attestation in `predicate.package`. `npm run verify` requires
 * it to be the package asked about (scripts/lib/provenance-verify.ts).
 */

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const SLSA_PROVENANCE_V1 = 'https://slsa.dev/provenance/v1';
/** Not build provenance: who published and when, signed by the registry. */
export const PUBLISH_ATTESTATION_V1 = 'https://edge-registry.dev/attestations/publish/v1';
export const GITHUB_BUILD_TYPE = 'https://actions.github.io/buildtypes/workflow/v1';
/** GitLab has no standard build type; ours, documented in docs/provenance.md. */
export const GITLAB_BUILD_TYPE = 'https://edge-registry.dev/buildtypes/gitlab-ci/v1';

export interface Subject {
  name: string;
  digest: { sha256: string };
}

export interface Statement {
  _type: typeof STATEMENT_TYPE;
  subject: Subject[];
  predicateType: string;
  predicate: Record<string, unknown>;
}

/** The package a statement is about: its full address and version. */
export interface PackageRef {
  /** HOST/NS/TYPE (a provider) or HOST/NS/NAME/SYSTEM (a module). */
  address: string;
  version: string;
}

export interface RegistryFacts {
  /** The registry's hostname. */
  hostname: string;
  publishedAt: string;
  /** The package the statement is about (every statement the registry signs has it; absent only in benchmarks). */
  package?: PackageRef;
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : undefined;

/** Raised when a verified CI token lacks a claim build provenance needs (`missing` names them). */
export class IncompleteClaimsError extends Error {
  constructor(readonly missing: string[]) {
    super(`the CI ID token lacks ${missing.join(', ')}: no build provenance can be stated`);
    this.name = 'IncompleteClaimsError';
  }
}

/** The web host of a CI issuer: github.com for GitHub's issuer, else the issuer's own host (GHES, GitLab instances, test issuers). */
export function ciServer(issuer: string, kind: 'github' | 'gitlab'): string {
  if (kind === 'github' && issuer === 'https://token.actions.githubusercontent.com') return 'https://github.com';
  const url = new URL(issuer);
  return kind === 'gitlab' ? `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, '')}` : `${url.protocol}//${url.host}`;
}

/**
 * The SLSA Provenance v1 statement of a release published by a trusted CI
 * job: `claims` verified by verifyCiToken, `publisher` the rule they matched.
 * Throws IncompleteClaimsError when the token lacks a claim the statement
 * needs (repository and its id, workflow ref, ref, commit sha, run id).
 */
export function buildProvenance(
  claims: CiClaims,
  publisher: TrustedPublisher,
  subjects: Subject[],
  facts: RegistryFacts,
): { statement: Statement; summary: BuildSummary } {
  return publisher.kind === 'github' ? githubProvenance(claims, publisher, subjects, facts) : gitlabProvenance(claims, publisher, subjects, facts);
}

function need(claims: CiClaims, names: string[]): Record<string, string> {
  const values: Record<string, string> = {};
  const missing: string[] = [];
  for (const name of names) {
    const value = text(claims[name]);
    if (value === undefined) missing.push(name);
    else values[name] = value;
  }
  if (claims.sha !== undefined && !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(String(claims.sha))) missing.push('sha (a full commit hash)');
  if (missing.length) throw new IncompleteClaimsError(missing);
  return values;
}

function githubProvenance(claims: CiClaims, publisher: TrustedPublisher, subject: Subject[], facts: RegistryFacts) {
  const c = need(claims, ['iss', 'repository', 'repository_id', 'workflow_ref', 'ref', 'sha', 'run_id']);
  const server = ciServer(c.iss!, 'github');
  const repository = c.repository!;
  // workflow_ref: OWNER/REPO/.github/workflows/FILE@REF — the file the run started from.
  const at = c.workflow_ref!.indexOf('@');
  const workflowPath = c.workflow_ref!.slice(repository.length + 1, at);
  if (!c.workflow_ref!.toLowerCase().startsWith(`${repository.toLowerCase()}/`) || at < 0 || !workflowPath.startsWith('.github/workflows/')) {
    throw new IncompleteClaimsError(['workflow_ref (OWNER/REPO/.github/workflows/FILE@REF)']);
  }
  const builder = text(claims.job_workflow_ref) ?? c.workflow_ref!;
  const attempt = text(claims.run_attempt) ?? '1';
  const runUrl = `${server}/${repository}/actions/runs/${c.run_id}/attempts/${attempt}`;
  const repositoryUrl = `${server}/${repository}`;
  const statement: Statement = {
    _type: STATEMENT_TYPE,
    subject,
    predicateType: SLSA_PROVENANCE_V1,
    predicate: {
      buildDefinition: {
        buildType: GITHUB_BUILD_TYPE,
        externalParameters: {
          workflow: { ref: c.workflow_ref!.slice(at + 1), repository: repositoryUrl, path: workflowPath },
        },
        internalParameters: {
          github: {
            event_name: text(claims.event_name) ?? null,
            repository_id: c.repository_id,
            repository_owner_id: text(claims.repository_owner_id) ?? null,
            runner_environment: text(claims.runner_environment) ?? null,
          },
          registry: registryFacts(facts, publisher),
        },
        resolvedDependencies: [{ uri: `git+${repositoryUrl}@${c.ref}`, digest: { gitCommit: c.sha } }],
      },
      runDetails: {
        builder: { id: `${server}/${builder}` },
        metadata: { invocationId: runUrl, finishedOn: facts.publishedAt },
      },
    },
  };
  const summary: BuildSummary = {
    ci: 'github',
    repository,
    repositoryId: c.repository_id!,
    repositoryUrl,
    workflow: workflowPath.slice('.github/workflows/'.length),
    ref: c.ref!,
    commit: c.sha!,
    commitUrl: `${repositoryUrl}/commit/${c.sha}`,
    runId: c.run_id!,
    runUrl,
  };
  return { statement, summary };
}

function gitlabProvenance(claims: CiClaims, publisher: TrustedPublisher, subject: Subject[], facts: RegistryFacts) {
  const c = need(claims, ['iss', 'project_path', 'project_id', 'ref', 'ref_type', 'sha', 'pipeline_id']);
  const server = ciServer(c.iss!, 'gitlab');
  const fullRef = c.ref_type === 'tag' ? `refs/tags/${c.ref}` : c.ref_type === 'branch' ? `refs/heads/${c.ref}` : c.ref!;
  const repositoryUrl = `${server}/${c.project_path}`;
  // ci_config_ref_uri: HOST/GROUP/PROJECT//PATH@REF — the pipeline definition that ran.
  const configRef = text(claims.ci_config_ref_uri);
  const configPath = configRef ? (/\/\/([^@]+)@/.exec(configRef)?.[1] ?? '.gitlab-ci.yml') : '.gitlab-ci.yml';
  const jobId = text(claims.job_id);
  const runUrl = jobId ? `${repositoryUrl}/-/jobs/${jobId}` : `${repositoryUrl}/-/pipelines/${c.pipeline_id}`;
  const statement: Statement = {
    _type: STATEMENT_TYPE,
    subject,
    predicateType: SLSA_PROVENANCE_V1,
    predicate: {
      buildDefinition: {
        buildType: GITLAB_BUILD_TYPE,
        externalParameters: {
          project: { path: c.project_path, id: c.project_id, url: repositoryUrl },
          config: { path: configPath, ref_uri: configRef ?? null },
          ref: fullRef,
          pipeline_source: text(claims.pipeline_source) ?? null,
        },
        internalParameters: {
          gitlab: {
            project_id: c.project_id,
            namespace_id: text(claims.namespace_id) ?? null,
            pipeline_id: c.pipeline_id,
            job_id: jobId ?? null,
            runner_environment: text(claims.runner_environment) ?? null,
            ref_protected: text(claims.ref_protected) ?? null,
          },
          registry: registryFacts(facts, publisher),
        },
        resolvedDependencies: [{ uri: `git+${repositoryUrl}@${fullRef}`, digest: { gitCommit: c.sha } }],
      },
      runDetails: {
        builder: { id: configRef ? `https://${configRef}` : `${repositoryUrl}//${configPath}` },
        metadata: { invocationId: runUrl, finishedOn: facts.publishedAt },
      },
    },
  };
  const summary: BuildSummary = {
    ci: 'gitlab',
    repository: c.project_path!,
    repositoryId: c.project_id!,
    repositoryUrl,
    workflow: configPath,
    ref: fullRef,
    commit: c.sha!,
    commitUrl: `${repositoryUrl}/-/commit/${c.sha}`,
    runId: jobId ? `${c.pipeline_id}/${jobId}` : c.pipeline_id!,
    runUrl,
  };
  return { statement, summary };
}

function registryFacts(facts: RegistryFacts, publisher: TrustedPublisher) {
  const { kind, issuer, ref, environment } = publisher;
  const rule =
    publisher.kind === 'github'
      ? {
          kind,
          issuer,
          repository: publisher.repository,
          // The ids the rule is pinned to (null for a rule stored before ids were pinned: its first publish pins them).
          repository_id: publisher.repositoryId ?? null,
          repository_owner_id: publisher.ownerId ?? null,
          workflow: publisher.workflow ?? null,
          ref: ref ?? null,
          environment: environment ?? null,
        }
      : {
          kind,
          issuer,
          project_path: publisher.projectPath,
          project_id: publisher.projectId ?? null,
          namespace_id: publisher.namespaceId ?? null,
          ref: ref ?? null,
          environment: environment ?? null,
        };
  return { hostname: facts.hostname, publishedAt: facts.publishedAt, ...(facts.package ? { package: facts.package } : {}), publisher: rule };
}

/** The publish attestation of a release published without a CI identity: the actor kind and the time — not build provenance. */
export function publishAttestation(actorKind: 'token' | 'operator' | 'person' | 'ci', subjects: Subject[], facts: RegistryFacts): Statement {
  return {
    _type: STATEMENT_TYPE,
    subject: subjects,
    predicateType: PUBLISH_ATTESTATION_V1,
    predicate: {
      buildProvenance: false,
      actor: { kind: actorKind },
      hostname: facts.hostname,
      ...(facts.package ? { package: facts.package } : {}),
      publishedAt: facts.publishedAt,
    },
  };
}
