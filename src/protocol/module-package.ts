import { InputError } from './errors';

/**
 * The rules a module package (.tar.gz or .zip) meets before it is published
 * as is, checked the same way by `publish-module` on a file
 * (scripts/lib/module/archive.ts) and by the publish API on a package stored
 * in R2 (src/store/uploads/stored-module.ts): every entry name relative and
 * inside the package (no absolute path, drive letter, `..` segment or NUL),
 * every link pointing inside it, and a .tf or .tofu file at its root (a
 * single top-level "./" prefix is allowed).
 */

/**
 * Normalises an entry name ("./a/b" → "a/b"). Throws InputError naming
 * `archive` for a name with a NUL, an absolute path or a ".." segment.
 */
export function checkedEntryName(archive: string, raw: string): string {
  if (raw.includes('\0')) throw new InputError(`${archive}: entry name with a NUL character`);
  if (raw.startsWith('/') || raw.startsWith('\\') || /^[a-zA-Z]:/.test(raw)) {
    throw new InputError(`${archive}: entry "${raw}" has an absolute path; a module package holds relative paths only`);
  }
  const parts = raw.replace(/\\/g, '/').split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new InputError(`${archive}: entry "${raw}" has a ".." path segment that would unpack outside the module; refused`);
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

/** Throws InputError naming `archive` unless one of the (normalised) file `names` is a .tf or .tofu file at the root. */
export function requireRootConfiguration(archive: string, names: readonly string[]): void {
  if (!names.some((name) => !name.includes('/') && /\.(tf|tofu)$/.test(name))) {
    throw new InputError(`${archive} has no .tf or .tofu file at its root: pack the module's directory itself, not its parent (or publish the directory and let publish-module pack it)`);
  }
}
