import { execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * A local stand-in of the few Gitea API (v1) routes Renovate's gitea platform
 * calls (renovate/dist/modules/platform/gitea), in front of a REAL bare git
 * repository that Renovate clones and pushes to (clone_url is file://). It is
 * not a mock of the client under test: Renovate, git and the registry are
 * real; this only answers "who am I, what is the repository, open a pull
 * request". Pull requests are recorded; every request is logged, and routes
 * it does not know answer 404 (and are listed in `unknown`).
 */
export interface Forge {
  /** http://127.0.0.1:PORT/api/v1 — Renovate's `endpoint`. */
  endpoint: string;
  /** The bare repository (file system path). */
  bare: string;
  /** "owner/name" */
  repository: string;
  pulls: { number: number; title: string; body: string; head: string; base: string }[];
  unknown: string[];
  close(): Promise<void>;
}

export const FORGE_TOKEN = 'forge-token-not-a-registry-token';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'Platform Team',
      GIT_AUTHOR_EMAIL: 'platform@acme.test',
      GIT_COMMITTER_NAME: 'Platform Team',
      GIT_COMMITTER_EMAIL: 'platform@acme.test',
    },
  });
}

/** Creates `dir`/bare.git with one commit on main holding `files` (path → text), and serves the API for it. */
export async function startForge(dir: string, files: Record<string, string>): Promise<Forge> {
  const work = join(dir, 'seed');
  const bare = join(dir, 'acme-infra.git');
  mkdirSync(work, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(work, path)), { recursive: true });
    writeFileSync(join(work, path), text);
  }
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'infrastructure');
  git(dir, 'clone', '-q', '--bare', work, bare);
  const repository = 'acme/infra';
  const pulls: Forge['pulls'] = [];
  const unknown: string[] = [];
  const sha = (ref: string) => git(bare, 'rev-parse', ref).trim();
  const owner = { id: 2, login: 'acme', full_name: 'Acme', email: 'acme@acme.test' };
  const bot = { id: 1, login: 'renovate-bot', full_name: 'Renovate Bot', email: 'bot@acme.test' };
  const repo = () => ({
    id: 1,
    full_name: repository,
    owner,
    default_branch: 'main',
    clone_url: `file://${bare}`,
    ssh_url: `file://${bare}`,
    permissions: { admin: false, pull: true, push: true },
    archived: false,
    mirror: false,
    empty: false,
    fork: false,
    has_pull_requests: true,
    has_issues: true,
    allow_merge_commits: true,
    allow_squash_merge: true,
    allow_rebase: true,
    allow_rebase_explicit: true,
    allow_fast_forward_only_merge: false,
    default_merge_style: 'merge',
  });
  const pr = (p: Forge['pulls'][number]) => ({
    number: p.number,
    title: p.title,
    body: p.body,
    state: 'open',
    merged: false,
    mergeable: true,
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
    user: bot,
    labels: [],
    assignees: [],
    base: { ref: p.base, label: p.base, sha: sha(p.base), repo: repo() },
    head: { ref: p.head, label: p.head, sha: sha(p.head), repo: repo() },
    html_url: `http://forge.invalid/${repository}/pulls/${p.number}`,
    diff_url: '',
  });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://forge');
    const path = url.pathname.replace(/^\/api\/v1/, '');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : {};
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    };
    if (req.headers.authorization !== `token ${FORGE_TOKEN}` && req.headers.authorization !== `Bearer ${FORGE_TOKEN}`) {
      json(401, { message: 'token required' });
      return;
    }
    const repoPath = `/repos/${repository}`;
    const route = `${req.method} ${path}`;
    if (route === 'GET /user') return json(200, bot);
    if (route === 'GET /version') return json(200, { version: '1.22.0' });
    if (route === `GET /orgs/${owner.login}`) return json(200, { id: owner.id, username: owner.login });
    if (route === `GET ${repoPath}`) return json(200, repo());
    if (route === `GET ${repoPath}/pulls`) return json(200, pulls.map(pr));
    if (route === `POST ${repoPath}/pulls`) {
      const created = { number: pulls.length + 1, title: String(body.title), body: String(body.body ?? ''), head: String(body.head), base: String(body.base) };
      pulls.push(created);
      return json(201, pr(created));
    }
    const one = new RegExp(`^GET ${repoPath}/pulls/(\\d+)$`).exec(route);
    if (one) {
      const found = pulls.find((p) => p.number === Number(one[1]));
      return found ? json(200, pr(found)) : json(404, { message: 'no such pull request' });
    }
    if (route === `GET ${repoPath}/issues` || route === `GET ${repoPath}/labels` || route === `GET /orgs/${owner.login}/labels`) return json(200, []);
    if (new RegExp(`^GET ${repoPath}/commits/.+/statuses$`).test(route)) return json(200, []);
    if (new RegExp(`^POST ${repoPath}/statuses/`).test(route)) {
      return json(201, {
        id: 1,
        status: body.state,
        context: body.context,
        description: body.description,
        target_url: body.target_url,
        created_at: new Date().toISOString(),
      });
    }
    unknown.push(`${route}${url.search}`);
    json(404, { message: 'not in the stand-in' });
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => res.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}/api/v1`,
    bare,
    repository,
    pulls,
    unknown,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The text of `path` on `branch` of the bare repository, or undefined when the branch or file does not exist. */
export function readPushed(forge: Forge, branch: string, path: string): string | undefined {
  try {
    return git(forge.bare, 'show', `${branch}:${path}`);
  } catch {
    return undefined;
  }
}

/** The branches in the bare repository (Renovate's pushes), without main. */
export function pushedBranches(forge: Forge): string[] {
  return git(forge.bare, 'for-each-ref', '--format=%(refname:short)', 'refs/heads/')
    .split('\n')
    .filter((b) => b !== '' && b !== 'main');
}
