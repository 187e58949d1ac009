import { describe, expect, it } from 'vitest';
import { constantTimeEqualText } from '../../../src/access/crypto/bytes';
import { sha256HexOfText } from '../../../src/access/crypto/token-hash';
import { newToken, tokenSha256 } from '../../../src/access/tokens';
import { sha256Hex } from '../../../src/protocol/hashes';

// The read path's SHA-256 (src/access/crypto/token-hash.ts) against FIPS 180-4's examples, @noble/hashes and the
// runtime's own crypto.subtle.digest: every length around the block boundaries, every byte value below 128.

async function nativeHex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return [...digest].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** A deterministic ASCII string of `length` characters (code units 0–127), varied by `seed`. */
function ascii(length: number, seed: number): string {
  let state = seed * 2654435761 + length;
  let text = '';
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    text += String.fromCharCode((state >>> 16) & 0x7f);
  }
  return text;
}

describe('sha256HexOfText: the token hash of every private-mode request', () => {
  it("gives FIPS 180-4's example digests", () => {
    expect(sha256HexOfText('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256HexOfText('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256HexOfText('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('equals @noble/hashes and crypto.subtle for every length 0–300 (one to six blocks) and every ASCII byte', async () => {
    for (let length = 0; length <= 300; length++) {
      for (const seed of [1, 2]) {
        const text = ascii(length, seed);
        const expected = await nativeHex(text);
        expect(sha256Hex(text), `length ${length}`).toBe(expected);
        expect(sha256HexOfText(text), `length ${length}`).toBe(expected);
      }
    }
    const everyByte = Array.from({ length: 128 }, (_, code) => String.fromCharCode(code)).join('');
    expect(sha256HexOfText(everyByte)).toBe(await nativeHex(everyByte));
  });

  it('hashes tokens as their KV key always was, and non-ASCII text by its UTF-8 bytes', async () => {
    for (let i = 0; i < 200; i++) {
      const token = newToken();
      expect(tokenSha256(token)).toBe(sha256Hex(token));
    }
    for (const text of ['é', 'ert_é', '日本語のトークン', '\u0080', '\u00ff'.repeat(60), 'a\ud83d\ude00b']) {
      expect(sha256HexOfText(text), text).toBe(await nativeHex(text));
    }
  });

  it('never depends on a previous call (its working state is reset each time)', () => {
    const first = sha256HexOfText(ascii(120, 7));
    sha256HexOfText(ascii(47, 3));
    expect(sha256HexOfText(ascii(120, 7))).toBe(first);
  });
});

describe('constantTimeEqualText', () => {
  it('is true only for the same string: any one code unit changed, at any place, or another length is unequal', () => {
    const hash = sha256HexOfText('ert_x');
    expect(constantTimeEqualText(hash, `${hash}`)).toBe(true);
    for (let i = 0; i < hash.length; i++) {
      const changed = `${hash.slice(0, i)}${hash[i] === '0' ? '1' : '0'}${hash.slice(i + 1)}`;
      expect(constantTimeEqualText(hash, changed), `position ${i}`).toBe(false);
    }
    expect(constantTimeEqualText(hash, hash.slice(0, -1))).toBe(false);
    expect(constantTimeEqualText(hash.slice(0, -1), hash)).toBe(false);
    expect(constantTimeEqualText('', '')).toBe(true);
    expect(constantTimeEqualText('\ud800', '\udc00')).toBe(false);
  });
});
