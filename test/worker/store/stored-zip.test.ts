import { describe, expect, it } from 'vitest';
import { h1Hash, sha256Hex } from '../../../src/protocol/hashes';
import { readZipDirectory, zipH1 } from '../../../src/protocol/zip-reader';
import { type RangeReader, storedZip } from '../../../src/store/uploads/stored-zip';
import { zipDeflated, zipStored } from '../../fixtures/archives';

// The reader the CLI runs on a file (test/scripts/provider/archive.test.ts holds a refusal test per rule), run in
// workerd over an R2-like object: the same zips are accepted and refused, with the same messages.

const CENTRAL = [0x50, 0x4b, 0x01, 0x02];

/** An in-memory object answering ranged gets as R2 does. */
function bucketOf(bytes: Uint8Array): RangeReader {
  return {
    async get(_key, { range }) {
      const slice = bytes.slice(range.offset, range.offset + range.length);
      return { body: new Response(slice).body!, arrayBuffer: async () => slice.buffer };
    },
  };
}

async function read(bytes: Uint8Array): Promise<{ names: string[]; h1: string }> {
  const zip = storedZip(bucketOf(bytes), 'k', bytes.byteLength);
  const directory = await readZipDirectory(zip, 'archive a.zip');
  return { names: directory.entries.map((e) => e.name), h1: await zipH1(zip, directory, 'archive a.zip') };
}

function indexOf(bytes: Uint8Array, pattern: readonly number[], from = 0): number {
  for (let i = from; i <= bytes.length - pattern.length; i++) if (pattern.every((b, j) => bytes[i + j] === b)) return i;
  return -1;
}

function patchAll(bytes: Uint8Array, from: string, to: string): Uint8Array {
  const a = new TextEncoder().encode(from);
  const b = new TextEncoder().encode(to);
  for (let at = indexOf(bytes, [...a]); at !== -1; at = indexOf(bytes, [...a], at + 1)) bytes.set(b, at);
  return bytes;
}

describe('the zip reader over an R2 object', () => {
  it('hashes stored and deflated entries as Go dirhash composes them', async () => {
    const files = { 'terraform-provider-x_v1.0.0': 'x'.repeat(5000), 'docs/a.md': '# a\n' };
    const expected = h1Hash(Object.entries(files).map(([name, data]) => ({ name, sha256Hex: sha256Hex(new TextEncoder().encode(data)) })));
    expect((await read(zipStored(files))).h1).toBe(expected);
    expect((await read(await zipDeflated(files))).h1).toBe(expected);
  });

  it('refuses what the CLI refuses: a backslash in a name, bytes after the end record, overlapping entries', async () => {
    const base = () => zipStored({ 'terraform-provider-x_v1.0.0': 'x', aa_evil: 'y' });
    await expect(read(patchAll(base(), 'aa_evil', 'aa\\evil'))).rejects.toThrow(
      /^archive a\.zip: unsafe entry name \(a backslash: "aa\\\\evil"\); rebuild the zip$/,
    );
    const zip = base();
    const trailing = new Uint8Array(zip.length + 3);
    trailing.set(zip);
    await expect(read(trailing)).rejects.toThrow(/^archive a\.zip: not a readable zip file \(3 bytes after its end of central directory record\); rebuild it$/);
    const overlapping = base();
    const second = indexOf(overlapping, CENTRAL, indexOf(overlapping, CENTRAL) + 1);
    new DataView(overlapping.buffer, overlapping.byteOffset).setUint32(second + 42, 0, true);
    await expect(read(overlapping)).rejects.toThrow(/overlaps the entry stored before it; rebuild the zip$/);
  });
});
