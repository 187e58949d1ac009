import semver from 'semver';
import { sha1 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { formatAddress, type ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { sortVersions } from '../protocol/version';
import type { ProviderDocs } from './docs';
import { docsKey } from './layout';
import type { PageKey, ProviderPageData } from './pages';
import type { KvStore, SigningKey, VersionRecord } from './types';

/**
 * The write side of the page documents (scripts only, never the Worker): a
 * version's docs, and the page data a provider's versions build (written by
 * src/store/providers/lists.ts from the provider's index; the catalogue by
 * src/store/pages/catalog.ts).
 */

/**
 * Stores a version's docs. Docs are immutable like the rest of a version:
 * the same docs again is a no-op ('unchanged'); different docs for a version
 * that has some throws InputError (409). A version published without docs
 * may get them later ('written'). With dryRun it only checks ('would write').
 */
export async function writeVersionDocs(
  kv: KvStore, address: ProviderAddress, version: string, docs: ProviderDocs, dryRun = false,
): Promise<'written' | 'unchanged' | 'would write'> {
  const text = JSON.stringify(docs);
  const existing = await kv.get(docsKey(address, version), 'text');
  if (existing === text) return 'unchanged';
  if (existing !== null) {
    throw new InputError(`${formatAddress(address)} ${version} already has different docs; docs are immutable like the version — publish a new version with the new docs`, 409);
  }
  if (dryRun) return 'would write';
  await kv.put(docsKey(address, version), text);
  return 'written';
}

/** The stored docs of a version, or null. */
export async function readVersionDocs(kv: KvStore, address: ProviderAddress, version: string): Promise<ProviderDocs | null> {
  const text = await kv.get(docsKey(address, version), 'text');
  return text === null ? null : (JSON.parse(text) as ProviderDocs);
}

/** The newest stable version, or the newest prerelease when none is stable; null for none. */
export function latestVersion(versions: readonly string[]): string | null {
  const sorted = sortVersions(versions).reverse();
  return sorted.find((v) => semver.prerelease(v) === null) ?? sorted[0] ?? null;
}

/** The page data of a provider from its version records and which versions have docs. */
export function providerPageData(records: readonly VersionRecord[], docsVersions: ReadonlySet<string>, description: string): ProviderPageData {
  const keys = new Map<string, SigningKey>();
  for (const record of records) keys.set(record.signingKey.key_id, record.signingKey);
  const byVersion = new Map(records.map((r) => [r.version, r]));
  return {
    address: records[0]!.address,
    description,
    versions: sortVersions([...byVersion.keys()]).reverse().map((version) => {
      const r = byVersion.get(version)!;
      return {
        version,
        publishedAt: r.publishedAt,
        protocols: r.protocols,
        keyId: r.signingKey.key_id,
        docs: docsVersions.has(version),
        platforms: [...r.packages]
          .sort((a, b) => `${a.os}_${a.arch}`.localeCompare(`${b.os}_${b.arch}`))
          .map(({ os, arch, filename, shasum, h1, size }) => ({ os, arch, filename, shasum, h1, size })),
      };
    }),
    keys: [...keys.values()].map((k): PageKey => ({ ...k, fingerprint: fingerprintOf(k) })),
  };
}

/**
 * The fingerprint of an armored OpenPGP public key (upper-case hex): SHA-1
 * of the v4 primary key packet (RFC 4880 §12.2) or SHA-256 for v6 (RFC
 * 9580). '' when the armor cannot be parsed or does not match the key id.
 */
export function fingerprintOf(key: SigningKey): string {
  try {
    const body = key.ascii_armor.replace(/\r/g, '').split('\n\n').slice(1).join('\n\n');
    const base64 = body.split('\n').filter((line) => line !== '' && !line.startsWith('=') && !line.startsWith('-----')).join('');
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const first = bytes[0]!;
    let offset: number;
    let length: number;
    if ((first & 0x40) !== 0) {
      if (((first & 0x3f) >>> 0) !== 6) return '';
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
      fingerprint = bytesToHex(sha256(Uint8Array.from([0x9b, length >>> 24, (length >> 16) & 0xff, (length >> 8) & 0xff, length & 0xff, ...packet]))).toUpperCase();
      if (!fingerprint.startsWith(key.key_id.toUpperCase())) return '';
    } else {
      return '';
    }
    return fingerprint;
  } catch {
    return '';
  }
}
