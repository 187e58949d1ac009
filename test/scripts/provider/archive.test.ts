import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectArchive } from '../../../scripts/lib/provider/archive';
import { tempDir } from '../helpers';
import { yazlZip } from '../../fixtures/yazl-zip';

// Zips that must be refused even though every byte of their data is intact: a name stored twice
// (which copy would Terraform unpack?) and a size in the directory that the data does not have.

const { dir, cleanup } = tempDir('archive');
afterAll(cleanup);

function zipOf(entries: [name: string, data: string][], options: { compress?: boolean; zip64?: boolean } = {}): Promise<Buffer> {
  return yazlZip(
    entries.map(([name, data]) => ({ name, data, compress: options.compress ?? true })),
    options,
  );
}

function write(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

describe('inspectArchive refuses', () => {
  it('an entry name stored twice', async () => {
    const path = write(
      'twice.zip',
      await zipOf([
        ['terraform-provider-x_v1.0.0', 'one'],
        ['terraform-provider-x_v1.0.0', 'two'],
      ]),
    );
    await expect(inspectArchive(path)).rejects.toMatchObject({
      name: 'InputError',
      message: `archive ${path}: entry "terraform-provider-x_v1.0.0" is stored twice; rebuild the zip`,
    });
  });

  it('an entry whose directory records another uncompressed size than its data has (CRC intact)', async () => {
    const zip = await zipOf([['terraform-provider-x_v1.0.0', 'x'.repeat(1000)]]);
    // Local header: uncompressed size at offset 22; central directory header: at offset 24.
    const local = zip.indexOf(Buffer.from([0x50, 0x4b, 0x03, 0x04]));
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    expect(zip.readUInt32LE(central + 24)).toBe(1000);
    if (zip.readUInt32LE(local + 22) === 1000) zip.writeUInt32LE(1001, local + 22);
    zip.writeUInt32LE(1001, central + 24);
    const path = write('size.zip', zip);
    await expect(inspectArchive(path)).rejects.toMatchObject({
      name: 'InputError',
      message: expect.stringContaining('uncompressed size is 1000 bytes, the zip says 1001'),
    });
  });

  it('an entry name that climbs out of the install directory', async () => {
    const zip = await zipOf([
      ['terraform-provider-x_v1.0.0', 'x'],
      ['aa/evil', 'y'],
    ]);
    // yazl refuses to write such a name, so write a harmless one of the same length and patch it everywhere.
    let at = zip.indexOf('aa/evil');
    let patched = 0;
    while (at !== -1) {
      zip.write('../evil', at);
      patched++;
      at = zip.indexOf('aa/evil', at + 1);
    }
    expect(patched).toBe(2); // local header and central directory
    const path = write('climb.zip', zip);
    await expect(inspectArchive(path)).rejects.toMatchObject({
      name: 'InputError',
      message: expect.stringMatching(/^archive .*climb\.zip: unsafe entry name \(.+\); rebuild the zip$/),
    });
  });

  it('but reads the same zip unpatched', async () => {
    const path = write('good.zip', await zipOf([['terraform-provider-x_v1.0.0', 'x'.repeat(1000)]]));
    expect((await inspectArchive(path)).entries.map((e) => [e.name, e.size])).toEqual([['terraform-provider-x_v1.0.0', 1000]]);
  });

  // What yauzl (the CLI's reader until issue 28) or Go refuse, now refused by the one reader (src/protocol/zip-reader.ts)
  // that the publish API runs too.
  const EXECUTABLE = 'terraform-provider-x_v1.0.0';
  const LOCAL = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
  const CENTRAL = Buffer.from([0x50, 0x4b, 0x01, 0x02]);
  const END = Buffer.from([0x50, 0x4b, 0x05, 0x06]);

  /** Writes every occurrence of `from` (local header and central directory) as `to`, of the same length. */
  function patchName(zip: Buffer, from: string, to: Buffer | string): Buffer {
    const bytes = typeof to === 'string' ? Buffer.from(to) : to;
    expect(bytes.length).toBe(Buffer.byteLength(from));
    let at = zip.indexOf(from);
    let patched = 0;
    for (; at !== -1; at = zip.indexOf(from, at + 1), patched++) bytes.copy(zip, at);
    expect(patched).toBe(2);
    return zip;
  }

  async function refusedWith(name: string, zip: Buffer, message: RegExp): Promise<void> {
    const path = write(name, zip);
    const error = await inspectArchive(path).catch((e: Error) => e);
    expect(error).toMatchObject({ name: 'InputError' });
    expect((error as Error).message.startsWith(`archive ${path}: `)).toBe(true);
    expect((error as Error).message).toMatch(message);
  }

  it('a ZIP64 archive (the publish API never accepted one)', async () => {
    await refusedWith('zip64.zip', await zipOf([[EXECUTABLE, 'zip64 body']], { zip64: true }), /: a ZIP64 archive; provider packages must be plain zip files/);
  });

  it('an encrypted entry, and one with the strong encryption flag alone', async () => {
    const zip = await zipOf([[EXECUTABLE, 'x']]);
    const central = zip.indexOf(CENTRAL);
    zip.writeUInt16LE(zip.readUInt16LE(central + 8) | 0x1, central + 8);
    await refusedWith('encrypted.zip', zip, /entry "terraform-provider-x_v1\.0\.0" is encrypted; provider packages cannot be$/);
    const strong = await zipOf([[EXECUTABLE, 'x']]);
    strong.writeUInt16LE(strong.readUInt16LE(central + 8) | 0x40, central + 8);
    await refusedWith('strong.zip', strong, /is encrypted/);
  });

  it('a compression method other than stored or deflate', async () => {
    const zip = await zipOf([[EXECUTABLE, 'x']]);
    zip.writeUInt16LE(12, zip.indexOf(CENTRAL) + 10); // bzip2
    await refusedWith('bzip2.zip', zip, /uses compression method 12; only stored and deflate are read by Terraform$/);
  });

  it('two entries sharing their data (overlapping)', async () => {
    const zip = await zipOf([
      [EXECUTABLE, 'x'.repeat(100)],
      ['README.md', 'y'.repeat(100)],
    ]);
    const second = zip.indexOf(CENTRAL, zip.indexOf(CENTRAL) + 1);
    zip.writeUInt32LE(0, second + 42); // its local header offset: the first entry's
    await refusedWith('overlap.zip', zip, /entry "(README\.md|terraform-provider-x_v1\.0\.0)" overlaps the entry stored before it; rebuild the zip$/);
  });

  it('an entry whose data runs into the central directory', async () => {
    const zip = await zipOf([[EXECUTABLE, 'x'.repeat(100)]]);
    const central = zip.indexOf(CENTRAL);
    zip.writeUInt32LE(zip.readUInt32LE(central + 20) + 8, central + 20); // compressed size
    await refusedWith('into-directory.zip', zip, /runs past the end of the file's entries \(into its central directory\); rebuild the zip$/);
  });

  it('a damaged local header', async () => {
    const zip = await zipOf([[EXECUTABLE, 'x']]);
    zip.writeUInt32LE(0, zip.indexOf(LOCAL));
    await refusedWith('local.zip', zip, /entry "terraform-provider-x_v1\.0\.0" has a damaged local header; rebuild the zip$/);
  });

  it('a name with a backslash, a drive letter or a newline', async () => {
    const base = (): Promise<Buffer> =>
      zipOf([
        [EXECUTABLE, 'x'],
        ['aa_evil', 'y'],
      ]);
    await refusedWith('backslash.zip', patchName(await base(), 'aa_evil', 'aa\\evil'), /unsafe entry name \(a backslash: "aa\\\\evil"\); rebuild the zip$/);
    await refusedWith('drive.zip', patchName(await base(), 'aa_evil', 'C:_evil'), /unsafe entry name \(absolute path: "C:_evil"\); rebuild the zip$/);
    await refusedWith('newline.zip', patchName(await base(), 'aa_evil', 'aa\nevil'), /unsafe entry name \(a newline: "aa\\nevil"\); rebuild the zip$/);
  });

  it('a name that is not UTF-8', async () => {
    const zip = patchName(
      await zipOf([
        [EXECUTABLE, 'x'],
        ['aa_evil', 'y'],
      ]),
      'aa_evil',
      Buffer.from([0x61, 0x61, 0xff, 0x65, 0x76, 0x69, 0x6c]),
    );
    await refusedWith('latin1.zip', zip, /entry 2 has a name that is not UTF-8; rebuild the zip$/);
  });

  it('bytes after the end of central directory record, and a zip split over disks', async () => {
    const zip = await zipOf([[EXECUTABLE, 'x']]);
    await refusedWith(
      'trailing.zip',
      Buffer.concat([zip, Buffer.from('appended')]),
      /not a readable zip file \(8 bytes after its end of central directory record\); rebuild it$/,
    );
    zip.writeUInt16LE(1, zip.lastIndexOf(END) + 4);
    await refusedWith('split.zip', zip, /not a readable zip file \(split over several disks\); rebuild it as one file$/);
  });

  it('a damaged extra field in the central directory', async () => {
    const zip = await zipOf([[EXECUTABLE, 'x']]);
    const central = zip.indexOf(CENTRAL);
    expect(zip.readUInt16LE(central + 30)).toBeGreaterThanOrEqual(4); // yazl writes an extended timestamp
    zip.writeUInt16LE(500, central + 46 + EXECUTABLE.length + 2); // its length: past the field
    await refusedWith('extra.zip', zip, /not a readable zip file \(central directory entry 1 has a damaged extra field\); rebuild it$/);
  });

  it('a deflated entry that inflates to more than its recorded size (stopped there)', async () => {
    const zip = await zipOf([[EXECUTABLE, 'x'.repeat(1000)]]);
    zip.writeUInt32LE(999, zip.indexOf(CENTRAL) + 24);
    await refusedWith(
      'bomb.zip',
      zip,
      /entry "terraform-provider-x_v1\.0\.0" cannot be read \(it inflates to more than the 999 bytes the zip says\); rebuild the zip$/,
    );
  });

  it('a stored entry whose two sizes differ', async () => {
    const zip = await zipOf([[EXECUTABLE, 'x'.repeat(1000)]], { compress: false });
    zip.writeUInt32LE(1001, zip.indexOf(CENTRAL) + 24);
    await refusedWith('stored-size.zip', zip, /entry "terraform-provider-x_v1\.0\.0" holds 1000 bytes, its header says 1001; rebuild the zip$/);
  });
});
