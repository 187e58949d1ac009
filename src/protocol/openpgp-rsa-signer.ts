/**
 * Detached binary OpenPGP v4 signatures (RFC 4880 §5.2.3) made by an RSA key
 * through WebCrypto (RSASSA-PKCS1-v1_5 over SHA-256), with the key imported
 * once. openpgp.js signs through WebCrypto as well, but imports the private
 * key again for every signature, and importing an RSA-4096 key costs the
 * Worker about as much as the signature itself (bench/README.md "Signing
 * with a registry-held key"). Only the signing is ours: the public half and
 * every signature made here are checked by openpgp.js, gpg --verify and
 * terraform init in the tests, as any other signature.
 */
import { base64url, concatBytes } from '../bytes';

/** An RSA OpenPGP v4 signing key's material, as in its secret key packet (big-endian integers). */
export interface RsaSigningKey {
  n: Uint8Array;
  e: Uint8Array;
  d: Uint8Array;
  /** The smaller prime, p < q (RFC 4880 §5.5.3). */
  p: Uint8Array;
  q: Uint8Array;
  /** p⁻¹ mod q. */
  u: Uint8Array;
  /** The key's v4 fingerprint (20 bytes): named in the signature so verifiers find the key. */
  fingerprint: Uint8Array;
}

/** Signs a document: resolves with a binary detached signature packet. */
export type DetachedSigner = (document: Uint8Array, created?: Date) => Promise<Uint8Array>;

/**
 * Imports `key` into WebCrypto once and returns a signer. Rejects (a
 * WebCrypto DataError) when the material is not a consistent RSA key, and
 * with a plain Error for a fingerprint that is not 20 bytes.
 */
export async function rsaDetachedSigner(key: RsaSigningKey): Promise<DetachedSigner> {
  if (key.fingerprint.byteLength !== 20) throw new Error(`an OpenPGP v4 fingerprint has 20 bytes, not ${key.fingerprint.byteLength}`);
  const cryptoKey = await crypto.subtle.importKey('jwk', rsaJwk(key), { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']);
  const fingerprint = key.fingerprint.slice();
  return async (document, created = new Date()) => {
    const hashed = hashedPart(fingerprint, created);
    // What is hashed and signed (§5.2.4): the document, the hashed part, then the v4 trailer.
    const trailer = new Uint8Array(6);
    trailer.set([0x04, 0xff]);
    new DataView(trailer.buffer).setUint32(2, hashed.byteLength);
    const signed = concatBytes([document, hashed, trailer]);
    const [digest, signature] = await Promise.all([crypto.subtle.digest('SHA-256', signed), crypto.subtle.sign('RSASSA-PKCS1-v1_5', cryptoKey, signed)]);
    const unhashed = concatBytes([u16(10), Uint8Array.of(9, SUBPACKET_ISSUER_KEY_ID), fingerprint.subarray(12)]);
    const body = concatBytes([hashed, unhashed, new Uint8Array(digest).subarray(0, 2), mpi(new Uint8Array(signature))]);
    return concatBytes([packetHeader(SIGNATURE_PACKET_TAG, body.byteLength), body]);
  };
}

const SIGNATURE_PACKET_TAG = 2;
const SIGNATURE_TYPE_BINARY = 0x00;
const PUBLIC_KEY_ALGORITHM_RSA = 1;
const HASH_ALGORITHM_SHA256 = 8;
const SUBPACKET_CREATION_TIME = 2;
const SUBPACKET_ISSUER_KEY_ID = 16;
const SUBPACKET_ISSUER_FINGERPRINT = 33;

/** The signature's hashed part: version, type, algorithms and the hashed subpackets (creation time, issuer fingerprint). */
function hashedPart(fingerprint: Uint8Array, created: Date): Uint8Array {
  const time = new Uint8Array(4);
  new DataView(time.buffer).setUint32(0, Math.floor(created.getTime() / 1000));
  const subpackets = concatBytes([Uint8Array.of(5, SUBPACKET_CREATION_TIME), time, Uint8Array.of(22, SUBPACKET_ISSUER_FINGERPRINT, 4), fingerprint]);
  return concatBytes([Uint8Array.of(4, SIGNATURE_TYPE_BINARY, PUBLIC_KEY_ALGORITHM_RSA, HASH_ALGORITHM_SHA256), u16(subpackets.byteLength), subpackets]);
}

/**
 * The key as a JWK. JWK's CRT parameters name the primes the other way round
 * (qi = q⁻¹ mod p), so OpenPGP's q is JWK's p and OpenPGP's u serves as qi,
 * as openpgp.js converts it.
 */
function rsaJwk(key: RsaSigningKey): JsonWebKey {
  const [d, p, q] = [key.d, key.p, key.q].map(toBigInt) as [bigint, bigint, bigint];
  return {
    kty: 'RSA',
    n: base64url(key.n),
    e: base64url(key.e),
    d: base64url(key.d),
    p: base64url(key.q),
    q: base64url(key.p),
    dp: base64url(fromBigInt(d % (q - 1n))),
    dq: base64url(fromBigInt(d % (p - 1n))),
    qi: base64url(key.u),
  };
}

/** A new-format packet header (RFC 4880 §4.2.2). */
function packetHeader(tag: number, length: number): Uint8Array {
  if (length < 192) return Uint8Array.of(0xc0 | tag, length);
  if (length < 8384) return Uint8Array.of(0xc0 | tag, ((length - 192) >> 8) + 192, (length - 192) & 0xff);
  const header = Uint8Array.of(0xc0 | tag, 0xff, 0, 0, 0, 0);
  new DataView(header.buffer).setUint32(2, length);
  return header;
}

/** A multiprecision integer (RFC 4880 §3.2): its bit count, then its bytes without leading zeros. */
function mpi(bytes: Uint8Array): Uint8Array {
  let start = 0;
  while (start < bytes.byteLength - 1 && bytes[start] === 0) start++;
  const value = bytes.subarray(start);
  const bits = (value.byteLength - 1) * 8 + (32 - Math.clz32(value[0]!));
  return concatBytes([u16(bits), value]);
}

function u16(n: number): Uint8Array {
  return Uint8Array.of(n >> 8, n & 0xff);
}

function toBigInt(bytes: Uint8Array): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

function fromBigInt(n: bigint): Uint8Array {
  const hex = n.toString(16);
  const padded = hex.length % 2 ? `0${hex}` : hex;
  return Uint8Array.from(padded.match(/../g) ?? ['00'], (h) => Number.parseInt(h, 16));
}
