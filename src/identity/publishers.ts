import { InputError } from '../protocol/errors';
import { parseIssuerUrl } from './issuer-url';
import type { GitHubPublisher, GitLabPublisher, TrustedPublisher } from '../store/publishers/record';

// The stored record (its fields and the list's parser) is the store's: src/store/publishers/record.ts.
export type { GitHubPublisher, GitLabPublisher, TrustedPublisher };

/**
 * Trusted publishers: the CI identities allowed to publish into a namespace
 * with no stored secret, as npm's and PyPI's trusted publishing. A publisher
 * names an issuer (the CI's OpenID Connect token service) and the claims its
 * ID token must carry:
 *
 *   github  `repository` (OWNER/REPO), optionally the workflow file of
 *           `workflow_ref`/`job_workflow_ref`, the `ref` and the `environment`
 *   gitlab  `project_path` (GROUP[/SUBGROUP…]/PROJECT), optionally the ref
 *           (`ref_type` + `ref`) and the `environment`
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
}

const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;
const GITLAB_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}$/;
const WORKFLOW = /^[A-Za-z0-9_.-]{1,200}\.ya?ml$/;

/**
 * Validates an operator's input into a publisher (id and created filled in).
 * Throws InputError naming the option and the fix for: a missing or non-https
 * issuer, neither or both of --repository and --project-path, a malformed
 * repository, project path, workflow file, ref pattern or environment,
 * --workflow with --project-path, or a GitLab path given for GitHub's issuer
 * (and the reverse).
 */
export async function parsePublisherInput(input: PublisherInput, now = new Date()): Promise<TrustedPublisher> {
  if (!input.issuer) throw new InputError(`--issuer is required (GitHub Actions: ${GITHUB_ISSUER}; GitLab: your instance, e.g. ${GITLAB_COM_ISSUER})`);
  const issuer = parseIssuerUrl(input.issuer, '--issuer');
  if (Boolean(input.repository) === Boolean(input.projectPath)) {
    throw new InputError('give exactly one of --repository OWNER/REPO (GitHub Actions) or --project-path GROUP/PROJECT (GitLab CI)');
  }
  const ref = input.ref === undefined ? undefined : parseRefPattern(input.ref);
  const environment = input.environment === undefined ? undefined : parseEnvironment(input.environment);
  const created = now.toISOString();
  if (input.repository) {
    if (issuer === GITLAB_COM_ISSUER) throw new InputError(`--repository is for GitHub Actions; a GitLab project is --project-path GROUP/PROJECT`);
    const repository = parseRepository(input.repository);
    const workflow = input.workflow === undefined ? undefined : parseWorkflow(input.workflow);
    const fields = { kind: 'github' as const, issuer, repository, ...(workflow ? { workflow } : {}), ...(ref ? { ref } : {}), ...(environment ? { environment } : {}) };
    return { id: await publisherId(fields), ...fields, created };
  }
  if (issuer === GITHUB_ISSUER) throw new InputError('--project-path is for GitLab CI; a GitHub repository is --repository OWNER/REPO');
  if (input.workflow !== undefined) throw new InputError('--workflow is for GitHub Actions publishers; a GitLab publisher is matched on --project-path, --ref and --environment');
  const projectPath = parseProjectPath(input.projectPath!);
  const fields = { kind: 'gitlab' as const, issuer, projectPath, ...(ref ? { ref } : {}), ...(environment ? { environment } : {}) };
  return { id: await publisherId(fields), ...fields, created };
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

/** A workflow file name (`release.yml`; a leading `.github/workflows/` is dropped); InputError otherwise. */
export function parseWorkflow(raw: string): string {
  const name = raw.replace(/^\.github\/workflows\//, '');
  if (!WORKFLOW.test(name)) throw new InputError(`--workflow "${raw}" must be a file name under .github/workflows/, e.g. release.yml`);
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
  const what = p.kind === 'github' ? `${p.repository}${p.workflow ? ` workflow ${p.workflow}` : ''}` : `${p.projectPath}`;
  return `${p.id}  ${p.kind}  ${p.issuer}  ${what}  ref ${p.ref ?? 'any'}  environment ${p.environment ?? 'any'}`;
}

async function publisherId(fields: Omit<GitHubPublisher, 'id' | 'created'> | Omit<GitLabPublisher, 'id' | 'created'>): Promise<string> {
  const canonical = JSON.stringify([
    fields.kind, fields.issuer,
    (fields.kind === 'github' ? fields.repository : fields.projectPath).toLowerCase(),
    fields.kind === 'github' ? fields.workflow ?? '' : '',
    fields.ref ?? '', (fields.environment ?? '').toLowerCase(),
  ]);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical)));
  return [...digest.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join('');
}
