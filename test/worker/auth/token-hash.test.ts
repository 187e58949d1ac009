import { describe, expect, it } from 'vitest';
import { constantTimeEqualText } from '../../../src/access/crypto/bytes';
import { newToken, tokenSha256 } from '../../../src/access/tokens';

// A token's KV key is its SHA-256 (@noble/hashes), checked here against the runtime's own crypto.subtle.digest;
// the record's hash is compared with constantTimeEqualText on every private-mode request.

async function nativeHex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return [...digest].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

describe('tokenSha256: the token hash of every private-mode request', () => {
  it('is the SHA-256 of the token in lower-case hex, as crypto.subtle computes it', async () => {
    for (let i = 0; i < 20; i++) {
      const token = newToken();
      expect(tokenSha256(token)).toBe(await nativeHex(token));
    }
    expect(tokenSha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('constantTimeEqualText', () => {
  it('is true only for the same string: any one code unit changed, at any place, or another length is unequal', () => {
    const hash = tokenSha256('ert_x');
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
