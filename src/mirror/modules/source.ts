import { UpstreamError } from '../upstream-http';

/**
 * Where an upstream registry says a module version's package is (its
 * `X-Terraform-Get`, a go-getter address), as something the Worker can
 * fetch over HTTPS — or a refusal naming the source.
 *
 * Fetched:
 * - GitHub sources, as public registry modules give them:
 *   `github.com/OWNER/REPO?ref=REF`, `git::https://github.com/OWNER/REPO(.git)?ref=REF`,
 *   `git::ssh://git@github.com/OWNER/REPO.git?ref=REF`, `git@github.com:OWNER/REPO.git?ref=REF`:
 *   the tag's (or commit's) tarball, https://codeload.github.com/OWNER/REPO/tar.gz/REF,
 *   whose single top-level directory is the repository root.
 * - HTTP(S) archives: a URL whose path ends in .tar.gz/.tgz/.zip or that
 *   carries `?archive=tar.gz|tgz|zip` (go-getter's rule); relative
 *   locations resolve against the download URL, as Terraform resolves them.
 * Either may name a subdirectory after `//` (`…//modules/x`, and `//*` for
 * "the archive's single top-level directory").
 *
 * Refused with an UpstreamError (422) naming the source: other git hosts,
 * `git::` without `ref` (a branch head is not a fixed version), s3::, gcs::,
 * hg::, local paths and anything else go-getter could only fetch with
 * credentials or tools a Worker does not have.
 */

export interface PackageSource {
  /** The URL the Worker fetches (before any `hosts` archives override). */
  url: string;
  format: 'tar.gz' | 'zip';
  /** Directories to strip: the archive's single top-level directory (GitHub tarballs, `//*`). */
  stripTop: boolean;
  /** Subdirectory (after stripping) that is the module root; "" for the whole archive. */
  subdir: string;
  /** How the source was written, for messages. */
  described: string;
}

/** Refused sources answer 422: a policy choice about an upstream, not a broken upstream (5xx) nor a missing module (404). */
const UNFETCHABLE = 422;

/**
 * Classifies `location` (as the upstream gave it; `base` is the URL of the
 * download answer, for relative locations). Throws UpstreamError(422) for a
 * source it cannot fetch, naming it and why.
 */
export function packageSource(location: string, base: string): PackageSource {
  const described = location.length > 200 ? `${location.slice(0, 200)}…` : location;
  const refuse = (why: string): never => {
    throw new UpstreamError(`the upstream's package source ${JSON.stringify(described)} cannot be proxied: ${why}`, UNFETCHABLE);
  };
  let rest = location.trim();
  const forced = /^([a-z0-9]+)::/.exec(rest);
  const getter = forced?.[1] ?? null;
  if (forced) rest = rest.slice(forced[0].length);
  if (getter !== null && getter !== 'git' && getter !== 'http' && getter !== 'https') {
    refuse(`${getter}:: sources need that service's credentials; only GitHub repositories and HTTP(S) archives are fetched`);
  }

  // git@github.com:OWNER/REPO.git → ssh form
  const scp = /^git@github\.com:(.+)$/.exec(rest);
  if (scp) rest = `ssh://git@github.com/${scp[1]}`;
  // go-getter's GitHub detector: `github.com/…` without a scheme (and ssh forms) is a git repository; https://github.com/… is HTTP.
  const detectedGit = getter === null && (/^github\.com\//.test(rest) || /^ssh:\/\//.test(rest));
  if (getter === null && /^github\.com\//.test(rest)) rest = `https://${rest}`;
  const isGitHub = /^(?:https|ssh):\/\/(?:git@)?github\.com\//.test(rest);

  if (getter === 'git' || detectedGit) {
    if (!isGitHub) {
      const host = /^[a-z+]+:\/\/(?:[^@/]+@)?([^/:?]+)/.exec(rest)?.[1] ?? rest.split('/')[0];
      refuse(`git repositories are fetched only from github.com (as a tag's tarball), not from ${host}`);
    }
    const url = splitUrl(rest, refuse);
    const parts = url.path
      .replace(/^\/+/, '')
      .replace(/\.git$/, '')
      .split('/');
    if (parts.length !== 2 || !parts.every((p) => /^[A-Za-z0-9._-]+$/.test(p))) refuse('not a github.com/OWNER/REPO address');
    const ref = url.query.get('ref');
    if (!ref) refuse('it names no ?ref= (a branch head is not a fixed version)');
    if (!/^[A-Za-z0-9._/+-]+$/.test(ref!) || ref!.includes('..')) refuse(`the ref ${JSON.stringify(ref)} is not a tag or commit name`);
    const [owner, repo] = parts as [string, string];
    return {
      url: `https://codeload.github.com/${owner}/${repo.replace(/\.git$/, '')}/tar.gz/${ref!.split('/').map(encodeURIComponent).join('/')}`,
      format: 'tar.gz',
      stripTop: true,
      subdir: cleanSubdir(url.subdir, refuse),
      described,
    };
  }

  // HTTP(S) archive (absolute, or relative to the download answer).
  let absolute: URL;
  const split = splitUrl(rest, refuse, true);
  try {
    absolute = new URL(split.bare, base);
  } catch {
    return refuse('not a URL');
  }
  if (absolute.protocol !== 'https:' && absolute.protocol !== 'http:') refuse(`${absolute.protocol} sources are not fetched`);
  const archive = split.query.get('archive');
  split.query.delete('archive');
  const format = archive !== null ? formatOf(`.${archive}`) : formatOf(absolute.pathname);
  if (format === null) refuse('not an archive URL (its path does not end in .tar.gz, .tgz or .zip and it has no ?archive=)');
  absolute.search = split.query.toString();
  const subdir = split.subdir === '*' ? '' : cleanSubdir(split.subdir, refuse);
  return { url: absolute.toString(), format: format!, stripTop: split.subdir === '*', subdir, described };
}

function formatOf(path: string): 'tar.gz' | 'zip' | null {
  if (/\.(tar\.gz|tgz)$/i.test(path)) return 'tar.gz';
  if (/\.zip$/i.test(path)) return 'zip';
  return null;
}

/** Splits go-getter's `URL//subdir?query` (the subdir comes before the query). */
function splitUrl(raw: string, refuse: (why: string) => never, relativeOk = false): { bare: string; path: string; subdir: string; query: URLSearchParams } {
  const q = raw.indexOf('?');
  const beforeQuery = q === -1 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q === -1 ? '' : raw.slice(q + 1));
  const scheme = /^[a-z+]+:\/\//.exec(beforeQuery)?.[0] ?? '';
  if (!scheme && !relativeOk) refuse('not a URL');
  const afterScheme = beforeQuery.slice(scheme.length);
  const cut = afterScheme.indexOf('//');
  const main = cut === -1 ? afterScheme : afterScheme.slice(0, cut);
  const subdir = cut === -1 ? '' : afterScheme.slice(cut + 2);
  const slash = main.indexOf('/');
  return { bare: scheme + main, path: scheme ? (slash === -1 ? '' : main.slice(slash)) : main, subdir, query };
}

function cleanSubdir(subdir: string, refuse: (why: string) => never): string {
  const parts = subdir.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..' || p.includes('*'))) refuse(`the subdirectory ${JSON.stringify(subdir)} is not a plain path`);
  return parts.join('/');
}

/** `url` with `https://HOST/` replaced by the policy's `hosts[HOST].archives` base, when it sets one. */
export function withArchivesOverride(url: string, archivesFor: (hostname: string) => string | undefined): string {
  const parsed = new URL(url);
  const base = archivesFor(parsed.hostname);
  if (base === undefined) return url;
  return new URL(`${parsed.pathname.replace(/^\//, '')}${parsed.search}`, base).toString();
}

/**
 * Refuses (UpstreamError 422) a package URL of plain `http://` unless the
 * policy names its host (`hosts[HOST]`): a proxied version is stored as an
 * immutable version of ours, and bytes anyone on the path could have
 * changed must not become one. Returns `url` otherwise.
 */
export function requireHttps(url: string, namedByPolicy: (hostname: string) => boolean, described = url): string {
  const parsed = new URL(url);
  if (parsed.protocol === 'http:' && !namedByPolicy(parsed.hostname)) {
    throw new UpstreamError(
      `the upstream's package source ${JSON.stringify(described)} cannot be proxied: it is plain http://, which anyone on the path can change; only https:// is fetched unless the mirror policy names the host (hosts["${parsed.hostname}"])`,
      UNFETCHABLE,
    );
  }
  return url;
}
