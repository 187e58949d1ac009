import { InputError } from '../protocol/errors';
import { parseIssuerUrl } from './issuer-url';
import { describeRights, parseScope, type PublishRights } from './scope';
import { NUMERIC_ID, type GitHubPublisher, type GitLabPublisher, type TrustedPublisher } from '../store/publishers/record';

// The stored record (its fields and the list's parser) is the store's: src/store/publishers/record.ts.
export type { GitHubPublisher, GitLabPublisher, TrustedPublisher };

/**
 * Trusted publishers: the CI identities allowed to publish into a namespace
 * with no stored secret, as npm's and PyPI's trusted publishing. A publisher
 * names an issuer (the CI's OpenID Connect token service) and the claims its
 * ID token must carry:
 *
 *   github  `repository_id` and `repository_owner_id` (immutable: a deleted or
 *           renamed repository's name can be registered again, its id never),
 *           then `repository` (OWNER/REPO), the workflow file of
 *           `workflow_ref`/`job_workflow_ref`, the `ref` and the `environment`
 *   gitlab  `project_id` and `namespace_id`, then `project_path`
 *           (GROUP[/SUBGROUP…]/PROJECT), the ref (`ref_type` + `ref`),
 *           `ref_protected` and the `environment`
 *
 * New publishers must be pinned to the ids, GitHub ones must name the
 * workflow, every one must name a ref or an environment unless the operator
 * says --any-ref, and the packages it may publish (`--package acme/thing`,
 * src/access/scope.ts) unless the operator says --namespace-wide.
 * Publishers stored before ids, workflows, refs or packages were required
 * publish nothing until the operator completes them (`npm run publisher --
 * pin`): nothing is ever pinned from a token (`unpinnedReason`).
 *
 * Refs are full git refs (`refs/tags/v*`, `refs/heads/main`) for both CIs, so
 * a tag pattern never matches a branch of the same name; `*` matches any run
 * of characters. Stored per namespace by src/store/publishers/; matched
 * against a verified token by ci-claims.ts.
 */

export const GITHUB_ISSUER = 'https://token.actions.githubusercontent.com';
export const GITLAB_COM_ISSUER = 'https://gitlab.com';

/** Most publishers one namespace may have (each publish is matched against all of them). */
export const MAX_PUBLISHERS = 100;

/** What `npm run publisher -- add` is given (raw strings, unvalidated). */
export interface PublisherInput {
  issuer?: string;
  repository?: string;
  projectPath?: string;
  workflow?: string;
  ref?: string;
  environment?: string;
  /** GitHub: --repository-id and --owner-id; GitLab: --project-id and --namespace-id (decimal). */
  repositoryId?: string;
  ownerId?: string;
  projectId?: string;
  namespaceId?: string;
  anyRef?: boolean;
  allowUnprotectedRef?: boolean;
  /** --package, repeatable: NS/TYPE or NS/NAME/SYSTEM patterns (scope.ts, form 'package'). */
  packages?: readonly string[];
  /** --namespace-wide: every package of the namespace, explicitly. */
  namespaceWide?: boolean;
  /** The namespace it is added to: every --package must be in it. */
  namespace?: string;
}

const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;
const GITLAB_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;
const WORKFLOW = /^[A-Za-z0-9_.-]{1,200}\.ya?ml$/;
/** A reusable workflow of another repository: OWNER/REPO/.github/workflows/FILE.yml, optionally @REF. */
const REUSABLE_WORKFLOW =
  /^([A-Za-z0-9][A-Za-z0-9-]{0,38})\/([A-Za-z0-9._-]{1,100})\/\.github\/workflows\/([A-Za-z0-9_.-]{1,200}\.ya?ml)(@[^\s\u0000-\u001f\u007f]{1,255})?$/;
/**
 * Validates an operator's input into a publisher (id and created filled in).
 * Throws InputError naming the option and the fix for: a missing or non-https
 * issuer, neither or both of --repository and --project-path, a malformed
 * repository, project path, workflow file, ref pattern or environment,
 * --workflow with --project-path, a GitLab path given for GitHub's issuer
 * (and the reverse), missing or malformed ids (GitHub: --repository-id and
 * --owner-id; GitLab: --project-id and --namespace-id), a GitHub publisher
 * without --workflow, neither --ref nor --environment without --any-ref,
 * --allow-unprotected-ref for GitHub, neither --package nor --namespace-wide
 * (or both), a malformed package pattern, and (when `input.namespace` is
 * given) a package of another namespace.
 */
export async function parsePublisherInput(input: PublisherInput, now = new Date()): Promise<TrustedPublisher> {
  if (!input.issuer) throw new InputError(`--issuer is required (GitHub Actions: ${GITHUB_ISSUER}; GitLab: your instance, e.g. ${GITLAB_COM_ISSUER})`);
  const issuer = parseIssuerUrl(input.issuer, '--issuer');
  if (Boolean(input.repository) === Boolean(input.projectPath)) {
    throw new InputError('give exactly one of --repository OWNER/REPO (GitHub Actions) or --project-path GROUP/PROJECT (GitLab CI)');
  }
  const ref = input.ref === undefined ? undefined : parseRefPattern(input.ref);
  const environment = input.environment === undefined ? undefined : parseEnvironment(input.environment);
  const common = { issuer, ...(ref ? { ref } : {}), ...(environment ? { environment } : {}), ...(input.anyRef ? { anyRef: true as const } : {}) };
  const fields = input.repository ? githubPublisher(input, common) : gitlabPublisher(input, common);
  return { id: await publisherId(fields), ...fields, created: now.toISOString(), ...parsePublisherRights(input, input.namespace) };
}

/**
 * The rights of a publisher from --package (repeatable) or --namespace-wide:
 * exactly one of them. Throws InputError naming the fix; a package of
 * another namespace than `namespace` (when given) is refused.
 */
export function parsePublisherRights(
  input: Pick<PublisherInput, 'packages' | 'namespaceWide'>,
  namespace?: string,
): { packages: string[] } | { namespaceWide: true } {
  const given = input.packages ?? [];
  if (input.namespaceWide && given.length) throw new InputError('give --package or --namespace-wide, not both');
  if (input.namespaceWide) return { namespaceWide: true };
  if (given.length === 0) {
    throw new InputError(
      'give --package NS/TYPE (a provider) or --package NS/NAME/SYSTEM (a module), repeatable, for what this publisher may publish; --namespace-wide allows every package of the namespace explicitly',
    );
  }
  const packages = [...new Set(given.map((raw) => parseScope(raw, 'package', '--package')))];
  const foreign = namespace === undefined ? undefined : packages.find((p) => p.split('/')[0] !== namespace.toLowerCase());
  if (foreign) throw new InputError(`--package ${foreign} is not in namespace ${namespace}: a publisher publishes only into the namespace it is added to`);
  return { packages };
}

/**
 * What a publisher of `namespace` (the namespace it is stored under) may publish and change, for scope.ts's
 * rightsAllow: its packages, or with --namespace-wide that namespace (never another: a publisher is trusted by one
 * namespace); nothing for one stored before rights existed.
 */
export function publisherRights(p: TrustedPublisher, namespace: string): PublishRights {
  return { namespaces: p.namespaceWide ? [namespace] : [], packages: p.packages ?? [] };
}

/**
 * Why a stored publisher may not publish until the operator completes it
 * (`npm run publisher -- pin`), or null when it may: stored before ids,
 * workflows, refs or packages were required. Nothing is pinned from a
 * token: the first token to arrive could be anyone's branch or workflow.
 */
export function unpinnedReason(p: TrustedPublisher): string | null {
  const missing = [];
  if (p.kind === 'github' ? p.repositoryId === undefined : p.projectId === undefined)
    missing.push(p.kind === 'github' ? 'the repository ids' : 'the project ids');
  if (p.kind === 'github' && !p.workflow) missing.push('a workflow');
  if (!p.ref && !p.environment && !p.anyRef) missing.push('a ref or an environment');
  if (!p.packages && !p.namespaceWide) missing.push('its packages');
  return missing.length ? `it names no ${missing.join(', no ')}` : null;
}

/** What every publisher has: its issuer, and the ref pattern, environment or --any-ref it is limited by. */
interface CommonFields {
  issuer: string;
  ref?: string;
  environment?: string;
  anyRef?: true;
}

/** Without --ref or --environment, any branch anyone with write access pushes could publish: refused unless --any-ref. */
function requireRefOrEnvironment({ ref, environment }: CommonFields, input: PublisherInput): void {
  if (!ref && !environment && !input.anyRef) {
    throw new InputError(
      "give --ref (e.g. 'refs/tags/v*') or --environment NAME: without either, any branch anyone with write access pushes can publish; --any-ref allows that explicitly",
    );
  }
}

/** A GitHub Actions publisher: repository, workflow and the repository's and owner's ids, all required. */
function githubPublisher(input: PublisherInput, common: CommonFields) {
  if (common.issuer === GITLAB_COM_ISSUER) throw new InputError(`--repository is for GitHub Actions; a GitLab project is --project-path GROUP/PROJECT`);
  if (input.projectId !== undefined || input.namespaceId !== undefined)
    throw new InputError('--project-id and --namespace-id are for GitLab publishers; a GitHub repository takes --repository-id and --owner-id');
  if (input.allowUnprotectedRef)
    throw new InputError(
      '--allow-unprotected-ref is for GitLab publishers (GitHub tokens carry no ref_protected); use --environment with protection rules on GitHub',
    );
  const repository = parseRepository(input.repository!);
  if (input.workflow === undefined)
    throw new InputError(
      '--workflow FILE.yml is required for GitHub publishers (the file under .github/workflows/ that publishes): without it, any workflow of the repository could publish',
    );
  const workflow = parseWorkflow(input.workflow);
  requireRefOrEnvironment(common, input);
  const repositoryId = parseNumericId(input.repositoryId, '--repository-id', "the repository's id");
  const ownerId = parseNumericId(input.ownerId, '--owner-id', "the id of the repository's owner");
  const { issuer, ...limits } = common;
  return { kind: 'github' as const, issuer, repository, workflow, repositoryId, ownerId, ...limits };
}

/** A GitLab CI publisher: project path and the project's and namespace's ids, all required; no workflow. */
function gitlabPublisher(input: PublisherInput, common: CommonFields) {
  if (common.issuer === GITHUB_ISSUER) throw new InputError('--project-path is for GitLab CI; a GitHub repository is --repository OWNER/REPO');
  if (input.workflow !== undefined)
    throw new InputError('--workflow is for GitHub Actions publishers; a GitLab publisher is matched on --project-path, --ref and --environment');
  if (input.repositoryId !== undefined || input.ownerId !== undefined)
    throw new InputError('--repository-id and --owner-id are for GitHub publishers; a GitLab project takes --project-id and --namespace-id');
  const projectPath = parseProjectPath(input.projectPath!);
  requireRefOrEnvironment(common, input);
  const projectId = parseNumericId(input.projectId, '--project-id', "the project's id");
  const namespaceId = parseNumericId(input.namespaceId, '--namespace-id', "the id of the project's group or user namespace");
  const { issuer, ...limits } = common;
  return {
    kind: 'gitlab' as const,
    issuer,
    projectPath,
    projectId,
    namespaceId,
    ...limits,
    ...(input.allowUnprotectedRef ? { allowUnprotectedRef: true as const } : {}),
  };
}

/** A decimal id as the CIs put in their tokens; InputError naming `option` otherwise. */
export function parseNumericId(raw: string | undefined, option: string, what: string): string {
  if (raw === undefined)
    throw new InputError(
      `${option} is required: ${what}, which a recreated repository of the same name never has (npm run publisher -- add looks it up when the CI's API is reachable)`,
    );
  const trimmed = raw.trim();
  if (!NUMERIC_ID.test(trimmed)) throw new InputError(`${option} "${raw}" must be ${what}: a positive decimal number`);
  return trimmed;
}

/** OWNER/REPO; InputError otherwise. */
export function parseRepository(raw: string): string {
  const [owner, repo, ...rest] = raw.split('/');
  if (rest.length || !owner || !repo || !OWNER.test(owner) || !REPO.test(repo) || repo === '.' || repo === '..') {
    throw new InputError(`--repository "${raw}" must be OWNER/REPO as on GitHub, e.g. acme/terraform-provider-thing`);
  }
  return raw;
}

/** GROUP[/SUBGROUP…]/PROJECT; InputError otherwise. */
export function parseProjectPath(raw: string): string {
  const segments = raw.split('/');
  if (segments.length < 2 || segments.length > 20 || !segments.every((s) => GITLAB_SEGMENT.test(s) && !s.endsWith('.git'))) {
    throw new InputError(`--project-path "${raw}" must be GROUP/PROJECT (or GROUP/SUBGROUP/PROJECT) as in the project's GitLab URL`);
  }
  return raw;
}

/**
 * A workflow file name (`release.yml`; a leading `.github/workflows/` is
 * dropped), or a reusable workflow of another repository
 * (`OWNER/REPO/.github/workflows/FILE.yml`, optionally `@REF`); InputError otherwise.
 */
export function parseWorkflow(raw: string): string {
  if (REUSABLE_WORKFLOW.test(raw)) return raw;
  const name = raw.replace(/^\.github\/workflows\//, '');
  if (!WORKFLOW.test(name))
    throw new InputError(
      `--workflow "${raw}" must be a file name under .github/workflows/, e.g. release.yml, or a reusable workflow OWNER/REPO/.github/workflows/FILE.yml[@REF]`,
    );
  return name;
}

/**
 * A full git ref pattern: `refs/…`, `*` as the only wildcard, no spaces,
 * control characters, `..`, `?`, `[`, `\`, `~`, `^` or `:` (which git refuses
 * in ref names). InputError otherwise.
 */
export function parseRefPattern(raw: string): string {
  if (!raw.startsWith('refs/') || raw.length > 255 || raw.includes('..') || /[\s\u0000-\u001f\u007f?[\\~^:]/.test(raw) || raw.endsWith('/')) {
    throw new InputError(`--ref "${raw}" must be a full git ref, '*' matching anything: e.g. 'refs/tags/v*' or refs/heads/main`);
  }
  return raw;
}

/** An environment name: 1–255 characters, no control characters; InputError otherwise. */
export function parseEnvironment(raw: string): string {
  if (raw.length === 0 || raw.length > 255 || /[\u0000-\u001f\u007f]/.test(raw) || raw.trim() !== raw) {
    throw new InputError(`--environment "${raw}" must be the environment's name (1–255 characters, no leading or trailing spaces)`);
  }
  return raw;
}

/** True when `ref` matches `pattern` (`*` = any run of characters, everything else literal). */
export function refMatches(pattern: string, ref: string): boolean {
  const parts = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`, 's').test(ref);
}

/** One line describing a publisher for listings and messages. */
export function describePublisher(p: TrustedPublisher): string {
  const what =
    p.kind === 'github'
      ? `${p.repository} (${p.repositoryId ? `id ${p.repositoryId}, owner id ${p.ownerId}` : 'ids not pinned yet'})${p.workflow ? ` workflow ${p.workflow}` : ''}`
      : `${p.projectPath} (${p.projectId ? `id ${p.projectId}, namespace id ${p.namespaceId}` : 'ids not pinned yet'})${p.allowUnprotectedRef ? ' unprotected refs allowed' : ''}`;
  const unpinned = unpinnedReason(p);
  return `${p.id}  ${p.kind}  ${p.issuer}  ${what}  ref ${p.ref ?? 'any'}  environment ${p.environment ?? 'any'}  ${p.namespaceWide ? 'NAMESPACE-WIDE (every package of its namespace)' : describeRights({ namespaces: [], packages: p.packages ?? [] })}${
    unpinned ? `  PUBLISHES NOTHING until pinned (${unpinned}): npm run publisher -- pin ${p.id}` : ''
  }`;
}

async function publisherId(fields: Omit<GitHubPublisher, 'id' | 'created'> | Omit<GitLabPublisher, 'id' | 'created'>): Promise<string> {
  const canonical = JSON.stringify([
    fields.kind,
    fields.issuer,
    (fields.kind === 'github' ? fields.repository : fields.projectPath).toLowerCase(),
    fields.kind === 'github' ? (fields.workflow ?? '') : '',
    fields.ref ?? '',
    (fields.environment ?? '').toLowerCase(),
    // Ids and flags only when present, so publishers stored before them keep their ids.
    ...(fields.kind === 'github'
      ? fields.repositoryId
        ? [fields.repositoryId, fields.ownerId]
        : []
      : fields.projectId
        ? [fields.projectId, fields.namespaceId]
        : []),
    ...(fields.anyRef ? ['any-ref'] : []),
    ...(fields.kind === 'gitlab' && fields.allowUnprotectedRef ? ['unprotected'] : []),
  ]);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical)));
  return [...digest.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join('');
}
