import { describe, expect, it } from 'vitest';
import { base64url, fromBase64url } from '../../../src/access/crypto/bytes';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('base64url (src/access/crypto/bytes.ts)', () => {
  it('decodes only the canonical spelling: the 3 other last characters of a 32-byte MAC with the same bytes are refused', () => {
    const mac = new Uint8Array(32).map((_, i) => (i * 37 + 11) & 0xff);
    const canonical = base64url(mac);
    expect(canonical).toHaveLength(43);
    expect(fromBase64url(canonical)).toEqual(mac);
    // 43 characters carry 258 bits: the last one's 2 low bits are unused, so these decode to the same 32 bytes.
    const last = ALPHABET.indexOf(canonical.at(-1)!);
    const sameBytes = [1, 2, 3].map((low) => `${canonical.slice(0, -1)}${ALPHABET[(last & ~3) | ((last + low) & 3)]}`);
    for (const variant of sameBytes) {
      expect(atob(variant.replace(/-/g, '+').replace(/_/g, '/') + '=')).toBe(atob(canonical.replace(/-/g, '+').replace(/_/g, '/') + '='));
      expect(fromBase64url(variant), variant).toBeNull();
    }
  });

  it('refuses what is not base64url, and round-trips every length', () => {
    for (const bad of ['a', 'ab+c', 'ab/c', 'ab=c', 'abc==', ' abc']) expect(fromBase64url(bad), bad).toBeNull();
    for (let length = 0; length <= 40; length++) {
      const bytes = new Uint8Array(length).map((_, i) => (i * 91 + length) & 0xff);
      expect(fromBase64url(base64url(bytes))).toEqual(bytes);
    }
  });
});
