import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import yazl from 'yazl';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectArchive } from '../../../scripts/lib/provider/archive';
import { tempDir } from '../helpers';

// Zips that must be refused even though every byte of their data is intact: a name stored twice
// (which copy would Terraform unpack?) and a size in the directory that the data does not have.

const { dir, cleanup } = tempDir('archive');
afterAll(cleanup);

function zipOf(entries: [name: string, data: string][]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, data] of entries) zip.addBuffer(Buffer.from(data), name, { mtime: new Date(0), compress: true });
  zip.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    zip.outputStream
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => resolve(Buffer.concat(chunks)))
      .on('error', reject);
  });
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
});
