import { describe, expect, it } from 'vitest';
import { formatShasums, h1Hash, parseShasums, zhHash } from '../../src/protocol/hashes';

/**
 * Fixed vectors for the lock-file hashes, with expectations computed outside
 * this project, so a change to the canonical forms (line format, sort order,
 * encoding) fails here even where every other test would agree with itself.
 */

// Computed once with Go's golang.org/x/mod/sumdb/dirhash.Hash1 (go1.19.8, Debian's
// golang-golang-x-mod-dev in /usr/share/gocode) over exactly these names and contents:
//   h, _ := dirhash.Hash1(names, func(n string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(files[n])), nil })
const DIRHASH_FILES: Record<string, string> = {
  'terraform-provider-vector_v1.0.0': '#!/bin/sh\necho vector\n',
  'B.txt': 'upper case B\n',
  'a.txt': 'lower case a\n',
  'é.txt': 'e acute\n',
  '\uFF21.txt': 'fullwidth A: UTF-8 EF BC A1, UTF-16 FF21\n',
  '😀.txt': 'emoji: UTF-8 F0 9F 98 80, UTF-16 D83D DE00\n',
  'docs/Z.md': 'nested\n',
};
const DIRHASH_H1 = 'h1:x5vpGj0y+mNDYsCv6mWtrtOuWb7u4THaUeoSwOuHe8c=';
// dirhash.Hash1 of no files: the SHA-256 of the empty string, in base64.
const DIRHASH_EMPTY = 'h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=';

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** Byte order of UTF-8, written out here rather than taken from the module under test. */
function compareUtf8(a: string, b: string): number {
  const [x, y] = [new TextEncoder().encode(a), new TextEncoder().encode(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

async function entries(files: Record<string, string>) {
  return Promise.all(Object.entries(files).map(async ([name, content]) => ({ name, sha256Hex: await sha256Hex(content) })));
}

describe('h1 (Go dirhash Hash1)', () => {
  it("equals Go's dirhash for non-ASCII and mixed-case names whose UTF-8 and UTF-16 orders differ", async () => {
    // The vector only guards the sort order if the two orders really differ for these names.
    const names = Object.keys(DIRHASH_FILES);
    const utf16 = [...names].sort();
    const utf8 = [...names].sort((a, b) => compareUtf8(a, b));
    expect(utf16).not.toEqual(utf8);
    expect(utf8.slice(-2)).toEqual(['\uFF21.txt', '😀.txt']);
    expect(h1Hash(await entries(DIRHASH_FILES))).toBe(DIRHASH_H1);
  });

  it('does not depend on the order the entries come in', async () => {
    const list = await entries(DIRHASH_FILES);
    expect(h1Hash([...list].reverse())).toBe(DIRHASH_H1);
  });

  it('of no files is the SHA-256 of nothing', () => {
    expect(h1Hash([])).toBe(DIRHASH_EMPTY);
  });

  it('changes with any content byte and with any name', async () => {
    const list = await entries(DIRHASH_FILES);
    const changedContent = list.map((e, i) => (i === 0 ? { ...e, sha256Hex: e.sha256Hex.replace(/^./, (c) => (c === '0' ? '1' : '0')) } : e));
    const changedName = list.map((e, i) => (i === 1 ? { ...e, name: 'b.txt' } : e));
    expect(h1Hash(changedContent)).not.toBe(DIRHASH_H1);
    expect(h1Hash(changedName)).not.toBe(DIRHASH_H1);
  });

  it('refuses a name with a newline, as dirhash does', () => {
    expect(() => h1Hash([{ name: 'a\nb', sha256Hex: '0'.repeat(64) }])).toThrow(/contains a newline/);
  });
});

describe('zh', () => {
  it('is "zh:" and the archive\'s lower-case hex SHA-256', async () => {
    // SHA-256("abc") from FIPS 180-2, appendix B.1.
    expect(await sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(zhHash('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')).toBe(
      'zh:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });

  it('refuses anything but 64 lower-case hex digits', () => {
    for (const bad of ['', 'BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD', 'ba78', `${'0'.repeat(64)}0`, 'g'.repeat(64)]) {
      expect(() => zhHash(bad), bad).toThrow(/is not a hex SHA-256/);
    }
  });
});

describe('SHA256SUMS', () => {
  it('is "<hex>␠␠<name>\\n" per file, sorted by UTF-8 bytes', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    const c = 'c'.repeat(64);
    expect(
      formatShasums([
        { filename: '😀.zip', sha256Hex: a },
        { filename: 'a.zip', sha256Hex: b },
        { filename: '\uFF21.zip', sha256Hex: c },
        { filename: 'B.zip', sha256Hex: a },
      ]),
    ).toBe(`${a}  B.zip\n${b}  a.zip\n${c}  \uFF21.zip\n${a}  😀.zip\n`);
  });

  it('parses text and binary mode, lower-cases digests, and names the bad line', () => {
    const upper = 'AB'.repeat(32);
    expect(parseShasums(`${upper}  x.zip\n${'0'.repeat(64)} *y.zip\r\n`)).toEqual([
      { filename: 'x.zip', sha256Hex: upper.toLowerCase() },
      { filename: 'y.zip', sha256Hex: '0'.repeat(64) },
    ]);
    expect(() => parseShasums(`${'0'.repeat(64)}  x.zip\nnot a line\n`)).toThrow(/^SHA256SUMS line 2 is not/);
    expect(() => parseShasums(`${'0'.repeat(64)}  x.zip\n${'1'.repeat(64)}  x.zip\n`)).toThrow('SHA256SUMS lists x.zip twice');
  });
});
