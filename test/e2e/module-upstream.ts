import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { zipBuffers } from '../../scripts/lib/provider/zip-binary';

/**
 * An independent module registry for the module-proxy tests, on plain HTTP
 * on loopback (what workerd under wrangler dev can reach; the policy's
 * `hosts` sends the upstream hostnames here): modules.v1 under /v1/modules/,
 * a stand-in for GitHub's archive endpoint under /codeload/OWNER/REPO/tar.gz/REF
 * (tarballs made with `git archive`, as GitHub makes them), and plain archives
 * under /files/. Each version's `source` is what its download answer's
 * X-Terraform-Get says; a `defect` makes its package hostile. Every request
 * is recorded.
 */

export type ModuleDefect = 'archive-500' | 'hang' | 'oversize' | 'not-gzip' | 'no-tf';

export interface UpstreamModuleVersion {
  version: string;
  /** The go-getter address the download answer gives (before the origin is known: {origin} is replaced). */
  source: string;
  defect?: ModuleDefect;
  /** Extra files of about 5 KB of Terraform text each (examples/eN/main.tf): a module of realistic size (the bench). */
  extraFiles?: number;
}

export interface UpstreamModule {
  namespace: string;
  name: string;
  system: string;
  versions: UpstreamModuleVersion[];
}

/** The module's files at `version` (what the repository holds at that tag). */
export function moduleFiles(name: string, version: string): Record<string, string> {
  return {
    'main.tf': `terraform {\n  required_version = ">= 1.0"\n}\n\nvariable "name" {\n  description = "Name of the ${name}"\n  type        = string\n}\n\nvariable "cidr" {\n  type    = string\n  default = "10.0.0.0/16"\n}\n\noutput "id" {\n  description = "The ${name}'s id"\n  value       = "${name}-\${var.name}-${version}"\n}\n`,
    'README.md': `# ${name} ${version}\n\nProxied <b onclick="alert(1)">module</b>.\n`,
    'modules/subnet/main.tf': `variable "cidr" {\n  type = string\n}\n\noutput "cidr" {\n  value = var.cidr\n}\n`,
    'examples/simple/main.tf': `module "x" {\n  source = "../../"\n  name   = "x"\n}\n`,
  };
}

/**
 * A GitHub tarball of `files` under `top/`, made as GitHub makes them: by
 * `git archive` of a commit (a pax global header carrying the commit id, the
 * top-level directory, a symlink kept as a symlink), gzip-compressed.
 */
export async function githubTarball(top: string, files: Record<string, string>): Promise<Buffer> {
  const repo = await mkdtemp(join(tmpdir(), 'edge-registry-module-repo-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(repo, path)), { recursive: true });
      await writeFile(join(repo, path), text);
    }
    await symlink('README.md', join(repo, 'LICENSE.link'));
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args], {
        cwd: repo,
        stdio: ['ignore', 'pipe', 'pipe'],
        maxBuffer: 64 * 1024 * 1024,
      });
    git('init', '-q');
    git('add', '-A');
    git('commit', '-q', '-m', 'release');
    return gzipSync(git('archive', '--format=tar', `--prefix=${top}/`, 'HEAD'));
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
}

export class ModuleUpstream {
  readonly requests: string[] = [];
  private readonly archives = new Map<string, Buffer>();
  private readonly hanging = new Set<ServerResponse>();

  private constructor(
    private server: Server,
    readonly origin: string,
    private modules: UpstreamModule[],
  ) {}

  static async start(modules: UpstreamModule[]): Promise<ModuleUpstream> {
    let upstream!: ModuleUpstream;
    const server = createServer(
      (req, res) =>
        void upstream.handle(req, res).catch((error: Error) => {
          res.statusCode = 500;
          res.end(error.message);
        }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    upstream = new ModuleUpstream(server, `http://127.0.0.1:${port}`, modules);
    return upstream;
  }

  /** Requests whose path contains `fragment`. */
  count(fragment: string): number {
    return this.requests.filter((path) => path.includes(fragment)).length;
  }

  /** Removes a version's defect (the upstream was repaired). */
  repair(name: string, version: string): void {
    for (const module of this.modules) if (module.name === name) for (const v of module.versions) if (v.version === version) delete v.defect;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = decodeURI(req.url ?? '/');
    this.requests.push(path);
    const listing = /^\/v1\/modules\/([^/]+)\/([^/]+)\/([^/]+)\/versions$/.exec(path);
    const download = /^\/v1\/modules\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)\/download$/.exec(path);
    const codeload = /^\/codeload\/([^/]+)\/([^/]+)\/tar\.gz\/(.+)$/.exec(path);
    const file = /^\/files\/(.+)$/.exec(path);
    const find = (ns: string, name: string, system: string) => this.modules.find((m) => m.namespace === ns && m.name === name && m.system === system);
    if (listing) {
      const module = find(listing[1]!, listing[2]!, listing[3]!);
      if (!module) return this.send(res, 404, { errors: ['not found'] });
      return this.send(res, 200, { modules: [{ versions: module.versions.map((v) => ({ version: v.version })) }] });
    }
    if (download) {
      const entry = find(download[1]!, download[2]!, download[3]!)?.versions.find((v) => v.version === download[4]);
      if (!entry) return this.send(res, 404, { errors: ['not found'] });
      res.writeHead(204, { 'x-terraform-get': entry.source.replace('{origin}', this.origin) });
      res.end();
      return;
    }
    const target = codeload ? { repo: codeload[2]!, ref: codeload[3]!, zip: false } : file ? { repo: file[1]!, ref: '', zip: file[1]!.endsWith('.zip') } : null;
    if (!target) return this.send(res, 404, { errors: ['no such path'] });
    const match = this.modules
      .flatMap((m) => m.versions.map((v) => ({ m, v })))
      .find(({ v }) => v.source.includes(target.ref ? `?ref=${target.ref}` : target.repo));
    if (!match) return this.send(res, 404, { errors: ['no such archive'] });
    const { m, v } = match;
    switch (v.defect) {
      case 'archive-500':
        return this.send(res, 500, { errors: ['upstream broken'] });
      case 'hang': {
        res.writeHead(200, { 'content-type': 'application/gzip' });
        res.write(Buffer.alloc(100, 1)); // then nothing more
        this.hanging.add(res);
        return;
      }
      case 'oversize': {
        // 3 MiB without Content-Length (chunked): the proxy must count, not trust a header.
        res.writeHead(200, { 'content-type': 'application/gzip' });
        const chunk = Buffer.alloc(1024 * 1024, 7);
        for (let i = 0; i < 3 && !res.destroyed; i++) {
          if (!res.write(chunk))
            await new Promise((resolve) => {
              res.once('drain', resolve);
              res.once('close', resolve);
            });
        }
        res.end();
        return;
      }
      case 'not-gzip':
        return this.sendBytes(res, Buffer.from('<html>this is not an archive</html>'));
      default:
        break;
    }
    const key = `${m.name}@${v.version}@${v.defect ?? ''}`;
    let bytes = this.archives.get(key);
    if (!bytes) {
      // Built once per version: the bench times downloads of up to 1,600 generated files.
      const files = v.defect === 'no-tf' ? { 'README.md': 'no module here' } : moduleFiles(m.name, v.version);
      for (let i = 0; i < (v.extraFiles ?? 0); i++) {
        files[`examples/e${i}/main.tf`] = Array.from(
          { length: 60 },
          (_, line) => `resource "aws_subnet" "s${i}_${line}" {\n  cidr_block = "10.${i % 256}.${line}.0/24"\n}\n`,
        ).join('');
      }
      bytes = target.zip ? await zipBuffers(files) : await githubTarball(`${target.repo}-${target.ref.replace(/^v/, '')}`, files);
      this.archives.set(key, bytes);
    }
    return this.sendBytes(res, bytes);
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private sendBytes(res: ServerResponse, bytes: Buffer): void {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) });
    res.end(bytes);
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
