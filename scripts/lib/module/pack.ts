import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, type Stats } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { constants as zlibConstants, createGzip } from 'node:zlib';
import { once } from 'node:events';
import { InputError } from '../../../src/protocol/errors';
import { isExcludedFromPackage } from '../../../src/protocol/module-package';
import { tarChunks } from '../../../src/protocol/tar-write';

/**
 * Packing a module directory into a deterministic .tar.gz: the same tree
 * gives the same bytes on every run and machine with the same Node (zlib),
 * so re-publishing an unchanged module is recognised as `unchanged`. The tar
 * is the one module tar writer (src/protocol/tar-write.ts, shared with the module
 * proxy); the gzip is Node's zlib at level 9, as it always was here.
 *
 * - Entries are regular files only (directories are implied by the paths;
 *   go-getter creates them), sorted by path in byte order.
 * - Every header is normalised: mtime 0, uid/gid 0, no user/group names, mode
 *   0644, or 0755 when the file has any execute bit.
 * - gzip at level 9 with no name and mtime 0 in its header, and the OS byte
 *   fixed to 3 (Unix), which zlib otherwise sets by build platform.
 *
 * Excluded: `.git/` and `.terraform/` anywhere, `*.tfstate*` files anywhere,
 * and `.terraform.lock.hcl` except at the root (a root module's lock file is
 * what its maintainers tested with; nested ones belong to examples' working
 * directories, and Terraform ignores a module's lock file when it is called).
 *
 * A symlink to a file inside the tree is packed as that file's bytes; one that
 * points outside the tree (or dangles) is refused, and so is a symlink to a
 * directory (a copy is clearer than a tree Terraform may unpack differently).
 */

export interface PackedFile {
  /** Path inside the package, "/"-separated, relative. */
  path: string;
  /** Absolute path read from. */
  source: string;
  size: number;
  executable: boolean;
}

export interface PackResult {
  /** The .tar.gz bytes. */
  bytes: Uint8Array;
  files: PackedFile[];
  /** Sum of the packed files' sizes (uncompressed). */
  unpackedSize: number;
  /** Paths left out by the exclusion rules (for the log). */
  excluded: string[];
}

/**
 * Lists the files a package of `dir` holds, in package order. Throws
 * InputError when `dir` is not a directory, holds no .tf or .tofu file at its
 * root, or has a symlink pointing outside it (or to a directory, or
 * nowhere).
 */
export function listModuleFiles(dir: string): { files: PackedFile[]; excluded: string[] } {
  const root = resolve(dir);
  let rootStat: Stats;
  try {
    rootStat = statSync(root);
  } catch {
    throw new InputError(`${dir}: no such directory`);
  }
  if (!rootStat.isDirectory()) throw new InputError(`${dir} is not a directory (give a module directory, or a .tar.gz/.zip package)`);
  const realRoot = realpathSync(root);
  const files: PackedFile[] = [];
  const excluded: string[] = [];

  const walk = (absolute: string, relativePath: string) => {
    for (const name of readdirSync(absolute).sort()) {
      const path = relativePath === '' ? name : `${relativePath}/${name}`;
      const full = join(absolute, name);
      if (isExcludedFromPackage(path)) {
        excluded.push(path);
        continue;
      }
      const link = lstatSync(full);
      if (link.isDirectory()) {
        walk(full, path);
        continue;
      }
      let stat = link;
      if (link.isSymbolicLink()) {
        const target = readlinkSync(full);
        let real: string;
        try {
          real = realpathSync(full);
        } catch {
          throw new InputError(`${path}: symlink to ${target} points nowhere; remove it or replace it with the file`);
        }
        const inside = relative(realRoot, real);
        if (inside === '' || inside.startsWith(`..${sep}`) || inside === '..' || isAbsolute(inside)) {
          throw new InputError(
            `${path}: symlink to ${target} points outside the module directory; a package must be self-contained — copy the file in instead`,
          );
        }
        stat = statSync(full);
        if (stat.isDirectory()) {
          throw new InputError(`${path}: symlink to the directory ${target}; replace it with a copy of the directory (symlinked directories are not packed)`);
        }
      }
      if (!stat.isFile()) throw new InputError(`${path} is not a regular file (a device, socket or FIFO); remove it from the module directory`);
      files.push({ path, source: full, size: stat.size, executable: (stat.mode & 0o111) !== 0 });
    }
  };
  walk(root, '');
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (!files.some((f) => !f.path.includes('/') && /\.(tf|tofu)$/.test(f.path))) {
    throw new InputError(
      `${dir} has no .tf or .tofu file at its root: a module's root directory holds its configuration (give the module's directory, not its parent)`,
    );
  }
  return { files, excluded };
}

/**
 * Packs `dir` as a deterministic .tar.gz (see the file comment). Throws
 * InputError as listModuleFiles, and when the package comes out over
 * `maxBytes` (packing stops as soon as it does).
 */
export async function packModule(dir: string, maxBytes: number): Promise<PackResult> {
  const { files, excluded } = listModuleFiles(dir);
  const unpackedSize = files.reduce((sum, f) => sum + f.size, 0);
  const gzip = createGzip({ level: 9, memLevel: 9, strategy: zlibConstants.Z_DEFAULT_STRATEGY });
  const chunks: Buffer[] = [];
  let packed = 0;
  gzip.on('data', (chunk: Buffer) => {
    packed += chunk.byteLength;
    chunks.push(chunk);
  });
  const done = once(gzip, 'end');
  const entries = function* () {
    for (const file of files) yield { name: file.path, mode: file.executable ? 0o755 : 0o644, data: readFileExactly(file) };
  };
  for (const chunk of tarChunks(entries())) {
    if (packed > maxBytes) break; // packing stops as soon as the package is over
    if (!gzip.write(chunk)) await once(gzip, 'drain');
  }
  gzip.end();
  await done;
  if (packed > maxBytes)
    throw new InputError(`${dir}: the package is over the size limit of ${formatMB(maxBytes)}; raise it with --max-size MB if this is intended`);
  const bytes = new Uint8Array(Buffer.concat(chunks));
  bytes[9] = 3; // gzip header OS byte: Unix, whatever the platform zlib was built for
  return { bytes, files, unpackedSize, excluded };
}

/** Reads a file, checking its size still matches what was listed (a file changing under the packer would make a package no one can reproduce). */
function readFileExactly(file: PackedFile): Buffer {
  const content = readFileSync(file.source);
  if (content.byteLength !== file.size) throw new InputError(`${file.path} changed while it was being packed; run the publish again`);
  return content;
}

export function formatMB(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 1e6 ? 2 : 1)} MB`;
}
