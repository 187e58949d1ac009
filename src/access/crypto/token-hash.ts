import { sha256Hex } from '../../protocol/hashes';

/**
 * SHA-256 of a short ASCII string as lower-case hex, for the read path's one
 * hash per request (the bearer token's: its KV key). The same function as
 * sha256Hex (src/protocol/hashes.ts, @noble/hashes) — FIPS 180-4, checked
 * against it and against the standard's test vectors in
 * test/worker/auth/token-hash.test.ts — written for this one use: the
 * message is read straight from the string's code units into one reused
 * schedule, and the digest written straight to hex, so a request allocates
 * nothing but the result (noble encodes the text, builds a hasher, a view and
 * a digest array per call: most of a private-mode request's token check).
 * No branch depends on the message's content, only on its length and on
 * whether it is ASCII: a string with a code unit above 127 (its UTF-8 bytes
 * differ from its code units) is hashed by sha256Hex instead. The hex digits
 * come from a table indexed by the digest, as in noble's bytesToHex (the
 * digest is the token's KV key, not a secret).
 */

// FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64 primes.
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
// §5.3.3: the initial hash value.
const H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
const W = new Int32Array(64);
const H = new Int32Array(8);

/** The lower-case hex SHA-256 of `text`'s UTF-8 bytes (see above): equal to sha256Hex(text) for every string. */
export function sha256HexOfText(text: string): string {
  const length = text.length;
  let high = 0;
  for (let i = 0; i < length; i++) high |= text.charCodeAt(i);
  if (high > 0x7f) return sha256Hex(text);
  // The message, a 0x80 byte, zeros and its length in bits (64-bit big-endian) fill whole 64-byte blocks.
  const blocks = ((length + 8) >>> 6) + 1;
  H.set(H0);
  for (let block = 0; block < blocks; block++) {
    for (let i = 0; i < 16; i++) {
      let word = 0;
      for (let j = 0; j < 4; j++) {
        const at = block * 64 + i * 4 + j;
        word = (word << 8) | (at < length ? text.charCodeAt(at) : at === length ? 0x80 : 0);
      }
      W[i] = word;
    }
    if (block === blocks - 1) {
      W[14] = length >>> 29;
      W[15] = length << 3;
    }
    compress();
  }
  let hex = '';
  for (let i = 0; i < 8; i++) {
    const h = H[i]!;
    hex += HEX[(h >>> 24) & 0xff]! + HEX[(h >>> 16) & 0xff]! + HEX[(h >>> 8) & 0xff]! + HEX[h & 0xff]!;
  }
  return hex;
}

const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));

/** FIPS 180-4 §6.2.2: the message schedule from W[0..15], then 64 rounds, added into H. */
function compress(): void {
  for (let t = 16; t < 64; t++) {
    const w15 = W[t - 15]!;
    const w2 = W[t - 2]!;
    const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
    const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
    W[t] = (W[t - 16]! + s0 + W[t - 7]! + s1) | 0;
  }
  let a = H[0]!;
  let b = H[1]!;
  let c = H[2]!;
  let d = H[3]!;
  let e = H[4]!;
  let f = H[5]!;
  let g = H[6]!;
  let h = H[7]!;
  for (let t = 0; t < 64; t++) {
    const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t]! + W[t]!) | 0;
    const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  H[0] = H[0]! + a;
  H[1] = H[1]! + b;
  H[2] = H[2]! + c;
  H[3] = H[3]! + d;
  H[4] = H[4]! + e;
  H[5] = H[5]! + f;
  H[6] = H[6]! + g;
  H[7] = H[7]! + h;
}
