/**
 * Byte helpers shared by tokens and signed URLs: base64url (RFC 4648 §5,
 * no padding; the encoder is src/bytes.ts's) and a constant-time comparison.
 */
import { base64url } from '../../bytes';

export { base64url };

/**
 * Decodes unpadded base64url; null (never throws) when the text is not
 * base64url or not its canonical form. The last character of a 32-byte MAC
 * carries 2 unused bits, so four spellings decode to the same bytes; only
 * the one base64url() writes is accepted, so an altered signature never
 * verifies.
 */
export function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return null;
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return base64url(bytes) === text ? bytes : null;
}

/**
 * True when both byte strings are equal. Takes the same time whatever the
 * position of the first difference (the lengths compared are those of fixed
 * size digests, so they are not secret).
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let diff = 0;
  for (let i = 0; i < a.byteLength; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * True when both strings are equal (hex digests, nonces, PKCE values): every code unit is compared, in time that
 * depends on the lengths only, never on where the first difference is. Strings of different lengths are unequal
 * at once (the lengths compared are those of fixed-size values, so they are not secret). No allocation: it runs on
 * every private-mode request (the token's hash against its record's).
 */
export function constantTimeEqualText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
