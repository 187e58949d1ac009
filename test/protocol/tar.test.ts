import { describe, expect, it } from 'vitest';
import { MAX_TAR_METADATA_BYTES, readTar, TarReader } from '../../src/protocol/tar';
import { writeTar } from '../../src/protocol/tar-write';
import { paxHeader, tarBytes } from '../fixtures/archives';

// The one tar parser (TarReader; readTar is it fed a whole archive): chunks may split headers and data anywhere,
// an entry's name and link target are those extractors use (pax over GNU long names over ustar fields), and a
// damaged or ambiguous archive is an InputError. Archives are written header by header (test/fixtures/archives.ts).

const MAIN = 'variable "a" {}\n';
const decoder = new TextDecoder();
const shape = (entries: ReturnType<typeof readTar>) => entries.map((e) => ({ ...e, data: decoder.decode(e.data) }));

function inChunks(bytes: Uint8Array, size: number, collect?: () => boolean) {
  const reader = new TarReader(collect);
  const entries = [];
  for (let at = 0; at < bytes.length && !reader.done; at += size) entries.push(...reader.push(bytes.slice(at, at + size)));
  reader.end();
  return entries;
}

describe('TarReader', () => {
  const archive = tarBytes([
    { name: 'main.tf', content: MAIN },
    paxHeader({ path: `modules/${'a'.repeat(120)}/main.tf`, linkpath: 'ignored' }),
    { name: 'short.tf', content: 'x'.repeat(700) },
    { name: '././@LongLink', type: 'L', content: `modules/${'b'.repeat(120)}/vars.tf\0` },
    { name: '././@LongLink', type: 'K', content: 'main.tf\0' },
    { name: 'link.tf', type: '2', link: 'other.tf' },
    paxHeader({ linkpath: '../main.tf' }),
    { name: 'sub/up.tf', type: '2', link: 'main.tf' },
  ]);

  it('reads the same entries whatever the chunks (headers and data split anywhere), and skips data when told', () => {
    const whole = shape(readTar(archive));
    expect(whole.map((e) => [e.name, e.type, e.linkname])).toEqual([
      ['main.tf', '0', ''],
      [`modules/${'a'.repeat(120)}/main.tf`, '0', 'ignored'],
      [`modules/${'b'.repeat(120)}/vars.tf`, '2', 'main.tf'],
      ['sub/up.tf', '2', '../main.tf'],
    ]);
    expect(whole[1]!.data).toBe('x'.repeat(700));
    for (const size of [1, 7, 100, 511, 512, 513, 1000, 4096]) expect(shape(inChunks(archive, size)), `chunks of ${size}`).toEqual(whole);
    expect(inChunks(archive, 300, () => false).map((e) => [e.name, e.data.length])).toEqual(whole.map((e) => [e.name, 0]));
  });

  it("reads an entry's size from a pax record: a header hidden in data by the ustar size is read as extractors read it", () => {
    const hidden = tarBytes([{ name: 'x.tf', type: '2', link: '../../etc/passwd' }], false);
    const entries = readTar(tarBytes([{ name: 'main.tf', content: MAIN }, paxHeader({ size: '0' }), { name: 'decoy.txt', data: hidden }]));
    expect(entries.map((e) => [e.name, e.linkname])).toEqual([
      ['main.tf', ''],
      ['decoy.txt', ''],
      ['x.tf', '../../etc/passwd'],
    ]);
  });

  it('reads what writeTar writes (a pax path for a long non-ASCII name)', () => {
    const files = [
      { name: 'main.tf', mode: 0o644, data: new TextEncoder().encode(MAIN) },
      { name: `é/${'c'.repeat(150)}.tf`, mode: 0o755, data: new Uint8Array(3) },
    ];
    expect(inChunks(writeTar(files), 97).map((e) => [e.name, e.mode, e.data.length])).toEqual(files.map((f) => [f.name, f.mode, f.data.length]));
  });

  it('refuses a damaged, truncated or ambiguous archive', () => {
    const refused = (bytes: Uint8Array, message: RegExp) => {
      expect(() => readTar(bytes)).toThrow(message);
      expect(() => inChunks(bytes, 5)).toThrow(message);
    };
    refused(tarBytes([{ name: 'main.tf', content: MAIN, badChecksum: true }]), /^not a valid tar archive \(a header checksum does not match\)$/);
    const main = tarBytes([{ name: 'main.tf', content: MAIN }], false);
    refused(main.subarray(0, 600), /\(it ends inside an entry: truncated\)$/);
    refused(main.subarray(0, 300), /\(no end-of-archive marker: truncated\)$/);
    refused(
      tarBytes([
        { name: '././@LongLink', type: 'L', content: 'x'.repeat(MAX_TAR_METADATA_BYTES + 1) },
        { name: 'main.tf', content: MAIN },
      ]),
      /a pax or GNU long-name header of 65537 bytes, over the 65536 read/,
    );
    refused(
      tarBytes([paxHeader({ path: 'main.tf' }), { name: '././@LongLink', type: 'L', content: '../evil.tf\0' }, { name: 'main.tf', content: MAIN }]),
      /an entry's name is given twice, by a pax record and a GNU long-name header, differently/,
    );
    refused(
      tarBytes([paxHeader({ linkpath: '../../etc/passwd' }, 'g'), { name: 'main.tf', content: MAIN }]),
      /a global pax header sets a path, link target or size/,
    );
    refused(tarBytes([paxHeader({ size: '-1' }), { name: 'main.tf', content: MAIN }]), /a pax record's size is unreadable/);
  });
});
