import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readSuppliedPackage } from '../../../scripts/lib/module/archive';
import { tempDir } from '../helpers';
import { yazlZip } from '../../fixtures/yazl-zip';

// publish-module's reading of a supplied .zip (scripts/lib/module/archive.ts) through the one zip reader
// (src/protocol/zip-reader.ts) that the module proxy runs too. yauzl, its reader until issue 28, checked only the
// entries it read (the docs' files and links): the refusals below were accepted then. Zips are written by yazl, an
// independent writer, and damaged in place.

const { dir, cleanup } = tempDir('module-zip');
afterAll(cleanup);

const LOCAL = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const CENTRAL = Buffer.from([0x50, 0x4b, 0x01, 0x02]);
const MAIN = 'variable "a" {}\n';

const zipOf = yazlZip;

/** The central directory header of the `n`th entry (1-based). */
function central(zip: Buffer, n: number): number {
  let at = zip.indexOf(CENTRAL);
  for (let i = 1; i < n; i++) at = zip.indexOf(CENTRAL, at + 1);
  return at;
}

function write(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

async function refusedWith(name: string, zip: Buffer, message: RegExp): Promise<void> {
  const path = write(name, zip);
  const error = await readSuppliedPackage(path, 1 << 20).catch((e: Error) => e);
  expect(error, name).toMatchObject({ name: 'InputError' });
  expect((error as Error).message.startsWith(`${path}: `), (error as Error).message).toBe(true);
  expect((error as Error).message).toMatch(message);
}

describe('publish-module reads a supplied zip', () => {
  it("with the docs' files inflated, Windows separators read as separators, links read (made on Unix or macOS) and checked", async () => {
    const zip = await zipOf([
      { name: 'main.tf', data: MAIN },
      { name: 'modules/net/main.tf', data: 'output "o" {\n  value = 1\n}\n', compress: false },
      { name: 'README.md', data: '# Title\n' },
      { name: 'data.bin', data: 'x'.repeat(1000) },
      { name: 'alias.tf', data: 'main.tf', mode: 0o120777 },
    ]);
    // A Windows-made name with a backslash (same length as the one written).
    zip.write('modules\\net/main.tf', zip.indexOf('modules/net/main.tf', zip.indexOf(CENTRAL)));
    const read = await readSuppliedPackage(write('good.zip', zip), 1 << 20);
    expect(read.format).toBe('zip');
    expect(read.files.sort()).toEqual(['README.md', 'data.bin', 'main.tf', 'modules/net/main.tf']);
    expect(Object.fromEntries(read.docFiles)).toEqual({
      'main.tf': MAIN,
      'modules/net/main.tf': 'output "o" {\n  value = 1\n}\n',
      'README.md': '# Title\n',
    });
    expect(read.bytes).toEqual(new Uint8Array(zip));

    const escaping = await zipOf([
      { name: 'main.tf', data: MAIN },
      { name: 'x.tf', data: '../../etc/passwd', mode: 0o120777 },
    ]);
    escaping.writeUInt8(19, central(escaping, 2) + 5); // made by macOS: still a symlink
    await refusedWith('escaping-link.zip', escaping, /link "x\.tf" points to \.\.\/\.\.\/etc\/passwd, outside the module; refused$/);
  });

  it('but refuses a link whose target is over 4096 bytes before inflating it (a "link" could hold megabytes)', async () => {
    const zip = await zipOf([
      { name: 'main.tf', data: MAIN },
      { name: 'x.tf', data: 'a/'.repeat(3000), mode: 0o120777, compress: false },
    ]);
    await refusedWith('long-link.zip', zip, /link "x\.tf" has a target over 4096 bytes; refused$/);
  });

  it('but refuses an entry stored twice (which copy would Terraform unpack?)', async () => {
    const zip = await zipOf([
      { name: 'main.tf', data: MAIN },
      { name: 'data.bin', data: 'one' },
      { name: 'data.bin', data: 'two' },
    ]);
    await refusedWith('twice.zip', zip, /entry "data\.bin" is stored twice; rebuild the zip$/);
  });

  it('and two entries sharing their bytes (a zip bomb by overlap)', async () => {
    const zip = await zipOf([
      { name: 'main.tf', data: MAIN },
      { name: 'data.bin', data: 'y'.repeat(100) },
    ]);
    zip.writeUInt32LE(0, central(zip, 2) + 42); // its local header offset: the first entry's
    await refusedWith('overlap.zip', zip, /entry "(main\.tf|data\.bin)" overlaps the entry stored before it; rebuild the zip$/);
  });

  it('and an entry whose data runs into the central directory', async () => {
    const zip = await zipOf([
      { name: 'main.tf', data: MAIN },
      { name: 'data.bin', data: 'y'.repeat(100) },
    ]);
    const at = central(zip, 2) + 20; // compressed size
    zip.writeUInt32LE(zip.readUInt32LE(at) + 8, at);
    await refusedWith('into-directory.zip', zip, /entry "data\.bin" runs past the end of the file's entries \(into its central directory\); rebuild the zip$/);
  });

  it('and a damaged local header, of an entry publish-module does not read as well', async () => {
    const zip = await zipOf([
      { name: 'main.tf', data: MAIN },
      { name: 'data.bin', data: 'y' },
    ]);
    zip.writeUInt32LE(0, zip.indexOf(LOCAL, zip.indexOf(LOCAL) + 1));
    await refusedWith('local.zip', zip, /entry "data\.bin" has a damaged local header; rebuild the zip$/);
  });

  it('and an encrypted entry or an unsupported compression method, on any entry (Terraform could not unpack it)', async () => {
    const entries = [
      { name: 'main.tf', data: MAIN },
      { name: 'data.bin', data: 'y' },
    ];
    const encrypted = await zipOf(entries);
    const flags = central(encrypted, 2) + 8;
    encrypted.writeUInt16LE(encrypted.readUInt16LE(flags) | 0x1, flags);
    await refusedWith('encrypted.zip', encrypted, /entry "data\.bin" is encrypted; module packages cannot be$/);
    const bzip2 = await zipOf(entries);
    bzip2.writeUInt16LE(12, central(bzip2, 2) + 10);
    await refusedWith('bzip2.zip', bzip2, /entry "data\.bin" uses compression method 12; only stored and deflate are read by Terraform$/);
  });

  it('and a ZIP64 archive (under the size limit, a module package never needs one)', async () => {
    await refusedWith(
      'zip64.zip',
      await zipOf([{ name: 'main.tf', data: MAIN }], { zip64: true }),
      /: a ZIP64 archive; module packages must be plain zip files/,
    );
  });

  it('and a name that is not UTF-8 (Terraform would unpack it under other names on other systems)', async () => {
    const zip = await zipOf([
      { name: 'main.tf', data: MAIN },
      { name: 'aa_b.bin', data: 'y' },
    ]);
    for (let at = zip.indexOf('aa_b.bin'); at !== -1; at = zip.indexOf('aa_b.bin', at + 1)) zip.writeUInt8(0xff, at + 2);
    await refusedWith('latin1.zip', zip, /entry 2 has a name that is not UTF-8; rebuild the zip$/);
  });

  it("and a docs' file that does not inflate to its recorded size: fewer bytes, or more (inflating stopped just past it)", async () => {
    const claiming = async (delta: number) => {
      const zip = await zipOf([{ name: 'main.tf', data: MAIN.repeat(20) }]);
      const at = central(zip, 1) + 24; // uncompressed size
      zip.writeUInt32LE(MAIN.length * 20 + delta, at);
      return zip;
    };
    await refusedWith('long.zip', await claiming(1), /entry "main\.tf" cannot be read \(inflates to 320 bytes, its header says 321\); rebuild the zip$/);
    await refusedWith('short.zip', await claiming(-1), /entry "main\.tf" cannot be read \(inflates to 320 bytes, its header says 319\); rebuild the zip$/);
    await refusedWith(
      'bomb.zip',
      await claiming(-300),
      /entry "main\.tf" cannot be read \(does not inflate to the 20 bytes its header says: .+\); rebuild the zip$/,
    );
  });
});
