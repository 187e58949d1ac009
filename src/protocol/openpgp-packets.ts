import { sha1 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { GpgPublicKey } from './providers-v1';

// OpenPGP packet parsing for the Worker (openpgp.js stays out of the Worker's bundle).

/**
 * The fingerprint of an armored OpenPGP public key (upper-case hex): SHA-1
 * of the v4 primary key packet (RFC 4880 §12.2) or SHA-256 for v6 (RFC
 * 9580). '' when the armor cannot be parsed or does not match the key id.
 */
export function fingerprintOf(key: Pick<GpgPublicKey, 'key_id' | 'ascii_armor'>): string {
  try {
    const body = key.ascii_armor.replace(/\r/g, '').split('\n\n').slice(1).join('\n\n');
    const base64 = body
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('=') && !line.startsWith('-----'))
      .join('');
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const first = bytes[0]!;
    let offset: number;
    let length: number;
    if ((first & 0x40) !== 0) {
      if ((first & 0x3f) >>> 0 !== 6) return '';
      const l0 = bytes[1]!;
      if (l0 < 192) [length, offset] = [l0, 2];
      else if (l0 < 224) [length, offset] = [((l0 - 192) << 8) + bytes[2]! + 192, 3];
      else [length, offset] = [((bytes[2]! << 24) | (bytes[3]! << 16) | (bytes[4]! << 8) | bytes[5]!) >>> 0, 6];
    } else {
      if (((first >> 2) & 0x0f) !== 6) return '';
      const lengthType = first & 0x03;
      if (lengthType === 0) [length, offset] = [bytes[1]!, 2];
      else if (lengthType === 1) [length, offset] = [(bytes[1]! << 8) | bytes[2]!, 3];
      else [length, offset] = [((bytes[1]! << 24) | (bytes[2]! << 16) | (bytes[3]! << 8) | bytes[4]!) >>> 0, 5];
    }
    const packet = bytes.subarray(offset, offset + length);
    let fingerprint: string;
    if (packet[0] === 4) {
      fingerprint = bytesToHex(sha1(Uint8Array.from([0x99, length >> 8, length & 0xff, ...packet]))).toUpperCase();
      if (!fingerprint.endsWith(key.key_id.toUpperCase())) return '';
    } else if (packet[0] === 6) {
      fingerprint = bytesToHex(
        sha256(Uint8Array.from([0x9b, length >>> 24, (length >> 16) & 0xff, (length >> 8) & 0xff, length & 0xff, ...packet])),
      ).toUpperCase();
      if (!fingerprint.startsWith(key.key_id.toUpperCase())) return '';
    } else {
      return '';
    }
    return fingerprint;
  } catch {
    return '';
  }
}
