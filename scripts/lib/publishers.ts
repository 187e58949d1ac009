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
import { updatePublishers } from '../../src/store/publishers/write';
import type { Store } from '../../src/store/store';
import { unpinnedReason } from '../../src/access/publishers';

/**
 * The publisher commands over any Store (local state or --remote): the list
 * lives in R2 and changes only by conditional writes
 * (src/store/publishers/write.ts), so concurrent commands never undo each
 * other. scripts/publisher.ts parses arguments and prints; these do the work.
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
 * and what happened: `added`, or (the same CI identity already trusted)
 * `updated` when its packages changed to the ones given, else neither
 * (nothing written). Throws InputError for bad input (see
 * parsePublisherInput: the packages are required, in this namespace), a
 * failed lookup, or when the namespace already has MAX_PUBLISHERS.
 */
export async function addPublisher(
  store: Store,
  hostname: string,
  namespace: string,
  input: PublisherInput,
  lookup?: IdLookup,
): Promise<{ publisher: TrustedPublisher; added: boolean; updated: boolean }> {
  const scoped = { ...input, namespace };
  // Everything but the ids is checked before the lookup, so a typo is not sent to the CI's API.
  if (lookup) {
    const placeholders = input.repository
      ? { repositoryId: input.repositoryId ?? '1', ownerId: input.ownerId ?? '1' }
      : { projectId: input.projectId ?? '1', namespaceId: input.namespaceId ?? '1' };
    await parsePublisherInput({ ...scoped, ...placeholders });
  }
  const publisher = await parsePublisherInput(lookup ? await resolvePublisherIds(scoped, lookup) : scoped);
  return updatePublishers<{ publisher: TrustedPublisher; added: boolean; updated: boolean }>(store, hostname, namespace, (existing) => {
    const same = existing.find((p) => p.id === publisher.id);
    if (same && sameRights(same, publisher)) return { publishers: existing, result: { publisher: same, added: false, updated: false } };
    if (same) {
      const changed = withRights(same, publisher);
      return { publishers: existing.map((p) => (p.id === same.id ? changed : p)), result: { publisher: changed, added: false, updated: true } };
    }
    if (existing.length >= MAX_PUBLISHERS) throw new InputError(`namespace ${namespace} already has ${MAX_PUBLISHERS} trusted publishers; remove one first`);
    return { publishers: [...existing, publisher], result: { publisher, added: true, updated: false } };
  });
}

/**
 * Completes a publisher stored before ids, workflows, refs or packages were
 * required (publishers.ts unpinnedReason), which publishes nothing until
 * then: what it lacks comes from `input` (ids given, or looked up from the
 * CI's API when `lookup` is given; --workflow, --ref/--environment/--any-ref,
 * --package/--namespace-wide), what it has is kept. The completed publisher
 * replaces it in one conditional write (a concurrent remove wins: then
 * InputError). Returns the old and the new one. Throws InputError for an
 * unknown id, a publisher that needs no pin, or anything parsePublisherInput refuses.
 */
export async function pinPublisher(
  store: Store,
  hostname: string,
  namespace: string,
  id: string,
  input: PublisherInput,
  lookup?: IdLookup,
): Promise<{ before: TrustedPublisher; publisher: TrustedPublisher }> {
  const wanted = parsePublisherId(id);
  const before = (await readPublishers(store, hostname, namespace)).find((p) => p.id === wanted);
  if (!before) throw new InputError(`namespace ${namespace} has no trusted publisher ${wanted} (npm run publisher -- list --namespace ${namespace})`);
  if (unpinnedReason(before) === null) throw new InputError(`publisher ${wanted} is already pinned; to change its packages, add it again with --package`);
  const kept: PublisherInput =
    before.kind === 'github'
      ? {
          issuer: before.issuer,
          repository: before.repository,
          workflow: before.workflow ?? input.workflow,
          repositoryId: before.repositoryId ?? input.repositoryId,
          ownerId: before.ownerId ?? input.ownerId,
        }
      : {
          issuer: before.issuer,
          projectPath: before.projectPath,
          projectId: before.projectId ?? input.projectId,
          namespaceId: before.namespaceId ?? input.namespaceId,
          allowUnprotectedRef: before.allowUnprotectedRef,
        };
  const limits =
    before.ref || before.environment || before.anyRef
      ? { ref: before.ref, environment: before.environment, anyRef: before.anyRef }
      : { ref: input.ref, environment: input.environment, anyRef: input.anyRef };
  const rights =
    before.packages || before.namespaceWide
      ? { packages: before.packages, namespaceWide: before.namespaceWide }
      : { packages: input.packages, namespaceWide: input.namespaceWide };
  const full: PublisherInput = { ...kept, ...limits, ...rights, namespace };
  const publisher = await parsePublisherInput(lookup ? await resolvePublisherIds(full, lookup) : full);
  await updatePublishers(store, hostname, namespace, (existing) => {
    if (!existing.some((p) => p.id === wanted)) throw new InputError(`publisher ${wanted} was removed while it was being pinned; nothing changed`);
    const others = existing.filter((p) => p.id !== wanted && p.id !== publisher.id);
    return { publishers: [...others, publisher], result: undefined };
  });
  return { before, publisher };
}

/** The namespace's publishers, oldest first. */
export async function listPublishers(store: Store, hostname: string, namespace: string): Promise<TrustedPublisher[]> {
  return readPublishers(store, hostname, namespace);
}

/**
 * Removes the publisher with this id (12 hex digits, as `list` prints), in
 * one conditional write. Returns it; throws InputError when the namespace has none with that id.
 */
export async function removePublisher(store: Store, hostname: string, namespace: string, id: string): Promise<TrustedPublisher> {
  const wanted = parsePublisherId(id);
  return updatePublishers(store, hostname, namespace, (existing) => {
    const found = existing.find((p) => p.id === wanted);
    if (!found) {
      throw new InputError(`namespace ${namespace} has no trusted publisher ${wanted} (it has: ${existing.map((p) => p.id).join(', ') || 'none'})`);
    }
    return { publishers: existing.filter((p) => p.id !== wanted), result: found };
  });
}

/** A publisher id as `list` prints it (12 hex digits, any case); InputError otherwise. */
function parsePublisherId(id: string): string {
  const wanted = id.trim().toLowerCase();
  if (!/^[0-9a-f]{12}$/.test(wanted)) throw new InputError(`publisher id "${id}" must be the 12 hex digits npm run publisher -- list prints`);
  return wanted;
}

function sameRights(a: TrustedPublisher, b: TrustedPublisher): boolean {
  return Boolean(a.namespaceWide) === Boolean(b.namespaceWide) && JSON.stringify(a.packages ?? []) === JSON.stringify(b.packages ?? []);
}

/** `p` with the packages (or namespace-wide grant) of `from`. */
function withRights(p: TrustedPublisher, from: TrustedPublisher): TrustedPublisher {
  const { packages: _packages, namespaceWide: _wide, ...rest } = p;
  return {
    ...rest,
    ...(from.packages ? { packages: from.packages } : {}),
    ...(from.namespaceWide ? { namespaceWide: true as const } : {}),
  } as TrustedPublisher;
}

/** The listing as text lines (a header, then one line per publisher). */
export function formatPublishers(hostname: string, namespace: string, publishers: readonly TrustedPublisher[]): string {
  if (publishers.length === 0) return `${hostname}/${namespace} has no trusted publishers (npm run publisher -- add --namespace ${namespace} …)`;
  return [`trusted publishers of ${hostname}/${namespace}:`, ...publishers.map((p) => `  ${describePublisher(p)}`)].join('\n');
}
