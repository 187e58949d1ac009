import { createWriteStream, statSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { InputError, type Platform } from '../../../src/protocol/index';
import { archiveFilename, executableName } from '../../../src/protocol/release-files';

/**
 * Packages a raw provider executable the way goreleaser does for Terraform
 * providers: a zip holding one file, `terraform-provider-TYPE_vVERSION`
 * (`.exe` on windows), mode 0755, deflated.
 */

/**
 * Timestamp stored in generated zips. Fixed (SOURCE_DATE_EPOCH when set) so
 * zipping the same executable again gives the same bytes, and re-running a
 * publish from the same binaries is a no-op instead of an immutability error.
 */
export function zipTimestamp(): Date {
  const epoch = Number(process.env.SOURCE_DATE_EPOCH);
  return Number.isFinite(epoch) && epoch > 0 ? new Date(epoch * 1000) : new Date(Date.UTC(2000, 0, 1));
}

/**
 * Throws InputError unless `binaryPath` is a non-empty regular file (what
 * --binary must name): missing, a directory, unreadable or empty.
 */
export function assertReadableBinary(binaryPath: string): void {
  let size: number;
  try {
    const stat = statSync(binaryPath);
    if (!stat.isFile()) throw new Error('not a regular file');
    size = stat.size;
  } catch (error) {
    throw new InputError(`--binary ${binaryPath}: cannot be read (${(error as Error).message}); pass OS_ARCH=PATH to a built provider executable`);
  }
  if (size === 0) throw new InputError(`--binary ${binaryPath}: the file is empty; pass a built provider executable`);
}

/**
 * Writes `outDir/terraform-provider-TYPE_VERSION_OS_ARCH.zip` from the
 * executable at `binaryPath` and returns its path. Throws InputError when the
 * executable is missing, not a regular file or empty.
 */
export async function zipBinary(binaryPath: string, outDir: string, names: { type: string; version: string; platform: Platform }): Promise<string> {
  assertReadableBinary(binaryPath);
  const out = `${outDir}/${archiveFilename(names.type, names.version, names.platform)}`;
  const zip = new yazl.ZipFile();
  zip.addFile(binaryPath, executableName(names.type, names.version, names.platform), {
    mtime: zipTimestamp(),
    mode: 0o100755,
    compress: true,
  });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(out));
  return out;
}

/**
 * Builds a zip in memory from named contents (tests, the demo). Entries are
 * executables (0755) unless their name ends with "/" (directories).
 */
export async function zipBuffers(files: Record<string, Uint8Array | string>, options: { compress?: boolean } = {}): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(files)) {
    if (name.endsWith('/')) zip.addEmptyDirectory(name, { mtime: zipTimestamp(), mode: 0o40755 });
    else zip.addBuffer(Buffer.from(content), name, { mtime: zipTimestamp(), mode: 0o100755, compress: options.compress ?? true });
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}
