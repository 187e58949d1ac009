import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { readSuppliedPackage } from '../../../scripts/lib/module/archive';
import { paxHeader, tarBytes, type TarEntry } from '../../fixtures/archives';
import { tempDir } from '../helpers';

// publish-module's reading of a supplied .tar.gz (scripts/lib/module/archive.ts) through the one tar parser
// (TarReader, src/protocol/tar.ts) that the publish API and the module proxy run too: a link's target is the one
// extractors use (pax linkpath, GNU long link), a damaged header is refused. Hostile tars are written header by
// header (test/fixtures/archives.ts); a well-formed one by tar-stream, an independent writer.

const { dir, cleanup } = tempDir('module-tar');
afterAll(cleanup);

const MAIN = 'variable "a" {}\n';

function write(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

async function refusedWith(name: string, entries: TarEntry[], message: RegExp): Promise<void> {
  const path = write(name, gzipSync(tarBytes(entries)));
  const error = await readSuppliedPackage(path, 1 << 20).catch((e: Error) => e);
  expect(error, name).toMatchObject({ name: 'InputError' });
  expect((error as Error).message.startsWith(`${path}: `), (error as Error).message).toBe(true);
  expect((error as Error).message).toMatch(message);
}

function tarStream(entries: { name: string; content?: string; type?: 'file' | 'symlink' | 'directory'; linkname?: string }[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  const done = new Promise<void>((resolve) => pack.on('end', () => resolve()));
  for (const e of entries) pack.entry({ name: e.name, type: e.type ?? 'file', linkname: e.linkname }, e.content ?? '');
  pack.finalize();
  return done.then(() => gzipSync(Buffer.concat(chunks)));
}

describe('a supplied module .tar.gz', () => {
  it('is read when well formed (tar-stream: pax paths for long and non-ASCII names, a link inside), its doc files kept', async () => {
    const long = `modules/${'a'.repeat(120)}/main.tf`;
    const path = write(
      'good.tar.gz',
      await tarStream([
        { name: 'main.tf', content: MAIN },
        { name: 'modules/', type: 'directory' },
        { name: long, content: MAIN },
        { name: 'docs/é.txt', content: 'x' },
        { name: 'latest.tf', type: 'symlink', linkname: 'main.tf' },
        { name: 'README.md', content: '# hi\n' },
      ]),
    );
    const pkg = await readSuppliedPackage(path, 1 << 20);
    expect(pkg.files).toEqual(['main.tf', long, 'docs/é.txt', 'README.md']);
    expect([...pkg.docFiles.keys()]).toEqual(['main.tf', long, 'README.md']); // a submodule's .tf by its pax path
    expect(pkg.docFiles.get('README.md')).toBe('# hi\n');
  });

  it('refuses a symlink whose pax linkpath or GNU long link leaves the package, whatever its ustar linkname says', async () => {
    const link = { name: 'x.tf', type: '2', link: 'main.tf' };
    await refusedWith(
      'pax.tar.gz',
      [{ name: 'main.tf', content: MAIN }, paxHeader({ linkpath: '../../../../etc/passwd' }), link],
      /link "x\.tf" points to \.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd, outside the module; refused$/,
    );
    await refusedWith(
      'gnu.tar.gz',
      [{ name: 'main.tf', content: MAIN }, { name: '././@LongLink', type: 'K', content: '../../../../etc/passwd\0' }, link],
      /link "x\.tf" points to \.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd, outside the module; refused$/,
    );
  });

  it('refuses a header whose checksum does not match, and a truncated tar', async () => {
    await refusedWith(
      'sum.tar.gz',
      [
        { name: 'main.tf', content: MAIN },
        { name: 'x.tf', content: MAIN, badChecksum: true },
      ],
      /not a valid tar archive \(a header checksum does not match\)$/,
    );
    const path = write('cut.tar.gz', gzipSync(tarBytes([{ name: 'main.tf', content: MAIN }]).subarray(0, 600)));
    await expect(readSuppliedPackage(path, 1 << 20)).rejects.toThrow(`${path}: not a valid tar archive (it ends inside an entry: truncated)`);
  });
});
