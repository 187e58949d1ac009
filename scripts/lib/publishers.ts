import {
  describePublisher,
  GITHUB_ISSUER,
  MAX_PUBLISHERS,
  parsePublisherInput,
  parseProjectPath,
  parseRepository,
  type PublisherInput,
  type TrustedPublisher,
} from '../../src/access/publishers';
import { parseIssuerUrl } from '../../src/access/issuer-url';
import { InputError } from '../../src/protocol/errors';
import { readPublishers } from '../../src/store/publishers/read';
import { writePublishers } from '../../src/store/publishers/write';
import type { KvStore } from '../../src/store/store';

/**
 * The publisher commands over any KvStore (local state or --remote KV):
 * scripts/publisher.ts parses arguments and prints; these do the work.
 * Input is validated completely before anything is read or written.
 */

export interface IdLookup {
  /** The CI's REST API base (--api): GitHub https://api.github.com (GHES https://HOST/api/v3), GitLab https://HOST/api/v4. */
  api?: string;
  /** GITHUB_TOKEN / GITLAB_TOKEN for private repositories and projects (sent as a bearer, never printed). */
  env?: NodeJS.ProcessEnv;
  /** Milliseconds before the lookup gives up (default 10 s). */
  timeoutMs?: number;
}

/** The REST API base a lookup uses: --api, else GitHub's (GHES: the issuer's host + /api/v3) or the GitLab instance's /api/v4. */
export function defaultApi(input: PublisherInput): string {
  const issuer = parseIssuerUrl(input.issuer ?? '', '--issuer');
  if (input.projectPath) return `${issuer}/api/v4`;
  if (issuer === GITHUB_ISSUER) return 'https://api.github.com';
  return `${new URL(issuer).origin}/api/v3`;
}

/**
 * Fills in the immutable ids a publisher is pinned to: as given
 * (--repository-id/--owner-id, --project-id/--namespace-id), else looked up
 * from the CI's API (GitHub `GET API/repos/OWNER/REPO` → id, owner.id;
 * GitLab `GET API/projects/URL-ENCODED-PATH` → id, namespace.id). Throws
 * InputError naming the flags when only one of a pair is given, or the API
 * cannot be reached, does not know the repository, or answers for another
 * name (a renamed repository redirects: its ids belong to the new name).
 */
export async function resolvePublisherIds(input: PublisherInput, lookup: IdLookup = {}): Promise<PublisherInput> {
  const github = Boolean(input.repository);
  const [idFlag, ownerFlag] = github ? ['--repository-id', '--owner-id'] : ['--project-id', '--namespace-id'];
  const [id, ownerId] = github ? [input.repositoryId, input.ownerId] : [input.projectId, input.namespaceId];
  if (id !== undefined && ownerId !== undefined) return input;
  if (id !== undefined || ownerId !== undefined) throw new InputError(`give both ${idFlag} and ${ownerFlag}, or neither to look them up`);
  if (!input.issuer || Boolean(input.repository) === Boolean(input.projectPath)) return input; // parsePublisherInput says what is wrong
  const name = github ? parseRepository(input.repository!) : parseProjectPath(input.projectPath!);
  const api = (lookup.api ?? defaultApi(input)).replace(/\/+$/, '');
  const url = github ? `${api}/repos/${name}` : `${api}/projects/${encodeURIComponent(name)}`;
  const token = github ? lookup.env?.GITHUB_TOKEN : lookup.env?.GITLAB_TOKEN;
  const give = `give ${idFlag} N ${ownerFlag} N (${github ? "gh api repos/OWNER/REPO --jq '.id, .owner.id'" : "the project's overview page shows its id; the group's id is on the group page"})`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json', 'user-agent': 'edge-registry-publisher', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      signal: AbortSignal.timeout(lookup.timeoutMs ?? 10_000),
    });
  } catch (error) {
    throw new InputError(`could not look up ${name}'s ids at ${url} (${(error as Error).message}); offline, or another API (--api URL)? ${give}`);
  }
  if (!response.ok) {
    const hint =
      response.status === 404 || response.status === 401 || response.status === 403 ? ` (private? set ${github ? 'GITHUB_TOKEN' : 'GITLAB_TOKEN'})` : '';
    throw new InputError(`looking up ${name} at ${url} answered ${response.status}${hint}; ${give}`);
  }
  const body = (await response.json().catch(() => null)) as Record<string, unknown> | null;
  const owner = body?.[github ? 'owner' : 'namespace'] as Record<string, unknown> | undefined;
  const found = body?.[github ? 'full_name' : 'path_with_namespace'];
  const numeric = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? String(v) : undefined);
  const foundId = numeric(body?.id);
  const foundOwner = numeric(owner?.id);
  if (!foundId || !foundOwner) throw new InputError(`${url} did not answer with ${github ? 'id and owner.id' : 'id and namespace.id'}; ${give}`);
  if (typeof found === 'string' && found.toLowerCase() !== name.toLowerCase()) {
    throw new InputError(`${name} is now ${found} (renamed or moved): add the publisher for ${found}, whose tokens carry that name`);
  }
  return github ? { ...input, repositoryId: foundId, ownerId: foundOwner } : { ...input, projectId: foundId, namespaceId: foundOwner };
}

/**
 * Adds a trusted publisher to the namespace, its ids looked up
 * (resolvePublisherIds) when `lookup` is given and they are not. Returns it
 * and whether it was added (false: the same publisher was already there,
 * nothing written). Throws InputError for bad input (see
 * parsePublisherInput), a failed lookup, or when the namespace already has
 * MAX_PUBLISHERS.
 */
export async function addPublisher(
  kv: KvStore,
  hostname: string,
  namespace: string,
  input: PublisherInput,
  lookup?: IdLookup,
): Promise<{ publisher: TrustedPublisher; added: boolean }> {
  // Everything but the ids is checked before the lookup, so a typo is not sent to the CI's API.
  if (lookup) {
    const placeholders = input.repository
      ? { repositoryId: input.repositoryId ?? '1', ownerId: input.ownerId ?? '1' }
      : { projectId: input.projectId ?? '1', namespaceId: input.namespaceId ?? '1' };
    await parsePublisherInput({ ...input, ...placeholders });
  }
  const publisher = await parsePublisherInput(lookup ? await resolvePublisherIds(input, lookup) : input);
  const existing = await readPublishers(kv, hostname, namespace);
  const same = existing.find((p) => p.id === publisher.id);
  if (same) return { publisher: same, added: false };
  if (existing.length >= MAX_PUBLISHERS) throw new InputError(`namespace ${namespace} already has ${MAX_PUBLISHERS} trusted publishers; remove one first`);
  await writePublishers(kv, hostname, namespace, [...existing, publisher]);
  return { publisher, added: true };
}

/** The namespace's publishers, oldest first. */
export async function listPublishers(kv: KvStore, hostname: string, namespace: string): Promise<TrustedPublisher[]> {
  return readPublishers(kv, hostname, namespace);
}

/**
 * Removes the publisher with this id (12 hex digits, as `list` prints).
 * Returns it; throws InputError when the namespace has none with that id.
 */
export async function removePublisher(kv: KvStore, hostname: string, namespace: string, id: string): Promise<TrustedPublisher> {
  const wanted = id.trim().toLowerCase();
  if (!/^[0-9a-f]{12}$/.test(wanted)) throw new InputError(`publisher id "${id}" must be the 12 hex digits npm run publisher -- list prints`);
  const existing = await readPublishers(kv, hostname, namespace);
  const found = existing.find((p) => p.id === wanted);
  if (!found) {
    throw new InputError(`namespace ${namespace} has no trusted publisher ${wanted} (it has: ${existing.map((p) => p.id).join(', ') || 'none'})`);
  }
  await writePublishers(
    kv,
    hostname,
    namespace,
    existing.filter((p) => p.id !== wanted),
  );
  return found;
}

/** The listing as text lines (a header, then one line per publisher). */
export function formatPublishers(hostname: string, namespace: string, publishers: readonly TrustedPublisher[]): string {
  if (publishers.length === 0) return `${hostname}/${namespace} has no trusted publishers (npm run publisher -- add --namespace ${namespace} …)`;
  return [`trusted publishers of ${hostname}/${namespace}:`, ...publishers.map((p) => `  ${describePublisher(p)}`)].join('\n');
}
