import { InputError } from './errors';

/**
 * The rules a module package (.tar.gz or .zip) meets before it is published
 * as is, checked the same way by `publish-module` on a file
 * (scripts/lib/module/archive.ts) and by the publish API on a package stored
 * in R2 (src/store/uploads/stored-module.ts): every entry name relative and
 * inside the package (no absolute path, drive letter, `..` segment or NUL),
 * every link pointing inside it, and a .tf or .tofu file at its root (a
 * single top-level "./" prefix is allowed). The module proxy
 * (src/mirror/modules/repack.ts) repacks upstream packages by the same rules.
 */

/** True when a package path (relative, "/"-separated) is left out of a package publish-module packs: .git/, .terraform/, state files, nested lock files. */
export function isExcludedFromPackage(path: string): boolean {
  const parts = path.split('/');
  if (parts.some((p) => p === '.git' || p === '.terraform')) return true;
  const base = parts[parts.length - 1]!;
  if (/\.tfstate/.test(base)) return true;
  return base === '.terraform.lock.hcl' && parts.length > 1;
}

/** True for the files module docs are read from: the root's and each modules/NAME/'s .tf and .tofu files, the root README.md. */
export function isDocFile(path: string): boolean {
  return path === 'README.md' || /^(?:modules\/[^/]+\/)?[^/]+\.(tf|tofu)$/.test(path);
}

/**
 * Normalises an entry name ("./a/b" → "a/b"). Throws InputError naming
 * `archive` for a name with a NUL, an absolute path or a ".." segment.
 */
export function checkedEntryName(archive: string, raw: string): string {
  if (raw.includes('\0')) throw new InputError(`${archive}: entry name with a NUL character`);
  const shown = raw.slice(0, 100); // an upstream's name may be long: the message stays one line
  if (raw.startsWith('/') || raw.startsWith('\\') || /^[a-zA-Z]:/.test(raw)) {
    throw new InputError(`${archive}: entry "${shown}" has an absolute path; a module package holds relative paths only`);
  }
  const parts = raw
    .replace(/\\/g, '/')
    .split('/')
    .filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new InputError(`${archive}: entry "${shown}" has a ".." path segment that would unpack outside the module; refused`);
  return parts.join('/');
}

/** Throws InputError naming `archive` unless a link at `name` (normalised) pointing to `target` stays inside the package. */
export function checkedLinkTarget(archive: string, name: string, target: string): void {
  if (target.startsWith('/') || /^[a-zA-Z]:/.test(target)) {
    throw new InputError(`${archive}: link "${name}" points to the absolute path ${target}; refused`);
  }
  let level = name.split('/').length - 1;
  for (const part of target.replace(/\\/g, '/').split('/')) {
    if (part === '..') level--;
    else if (part !== '' && part !== '.') level++;
    if (level < 0) throw new InputError(`${archive}: link "${name}" points to ${target}, outside the module; refused`);
  }
}

/**
 * What a tar entry of `type` ('0' or '7' file, '5' directory, '1'/'2' link) at
 * `name` is in a module package. Throws InputError naming `archive` for any
 * other type (a device, a FIFO, …): a package holds only files, directories
 * and links.
 */
export function tarEntryKind(archive: string, name: string, type: string): 'file' | 'directory' | 'link' {
  if (type === '0' || type === '7') return 'file';
  if (type === '5') return 'directory';
  if (type === '1' || type === '2') return 'link';
  throw new InputError(
    `${archive}: entry "${name}" is a ${{ 3: 'character device', 4: 'block device', 6: 'FIFO' }[type] ?? `type ${type} entry`}; a module package holds only files, directories and links`,
  );
}

/** Throws InputError naming `archive` unless one of the (normalised) file `names` is a .tf or .tofu file at the root. */
export function requireRootConfiguration(archive: string, names: readonly string[]): void {
  if (!names.some((name) => !name.includes('/') && /\.(tf|tofu)$/.test(name))) {
    throw new InputError(
      `${archive} has no .tf or .tofu file at its root: pack the module's directory itself, not its parent (or publish the directory and let publish-module pack it)`,
    );
  }
}
