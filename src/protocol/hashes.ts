import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { InputError } from './errors';

/**
 * Provider package hashes as Terraform and OpenTofu record them in lock files.
 *
 * `zh:` is the hex SHA-256 of the zip archive itself. `h1:` is Go's
 * dirhash Hash1 over the files inside the zip: for each entry name sorted by
 * bytes, the line "<hex sha256 of contents>  <name>\n"; h1 is the base64 of the
 * SHA-256 of those lines. These functions take already-computed digests so
 * the caller can hash large archives however is fastest for its runtime.
 */

const HEX64 = /^[0-9a-f]{64}$/;

/** "zh:<hex>" from an archive's hex SHA-256; throws InputError unless it is 64 lower-case hex digits. */
export function zhHash(archiveSha256Hex: string): string {
  if (!HEX64.test(archiveSha256Hex)) throw new InputError(`"${archiveSha256Hex}" is not a hex SHA-256`);
  return `zh:${archiveSha256Hex}`;
}

/** One file inside a zip: its name as stored and the hex SHA-256 of its uncompressed contents. */
export interface ZipEntryDigest {
  name: string;
  sha256Hex: string;
}

/**
 * Go dirhash Hash1 ("h1:…") from the entries of a zip. Throws InputError for a
 * file name containing a newline (dirhash refuses those too).
 */
export function h1Hash(entries: readonly ZipEntryDigest[]): string {
  const sorted = [...entries].sort((a, b) => compareBytes(a.name, b.name));
  let summary = '';
  for (const entry of sorted) {
    if (entry.name.includes('\n')) throw new InputError(`zip entry name ${JSON.stringify(entry.name)} contains a newline`);
    summary += `${entry.sha256Hex}  ${entry.name}\n`;
  }
  return `h1:${bytesToBase64(sha256(utf8ToBytes(summary)))}`;
}

// Go's sort.Strings orders by UTF-8 bytes, not UTF-16 code units.
function compareBytes(a: string, b: string): number {
  const left = utf8ToBytes(a);
  const right = utf8ToBytes(b);
  const length = Math.min(left.length, right.length);
  for (let i = 0; i < length; i++) if (left[i] !== right[i]) return left[i]! - right[i]!;
  return left.length - right.length;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** The hex SHA-256 of a small in-memory value (tokens, summaries); large files are hashed by the caller. */
export function sha256Hex(data: Uint8Array | string): string {
  return bytesToHex(sha256(typeof data === 'string' ? utf8ToBytes(data) : data));
}

/** One line of a SHA256SUMS document. */
export interface ShasumEntry {
  filename: string;
  sha256Hex: string;
}

/** A SHA256SUMS document in `sha256sum` format: "<hex>  <filename>\n" per file, sorted by file name. */
export function formatShasums(entries: readonly ShasumEntry[]): string {
  return [...entries]
    .sort((a, b) => compareBytes(a.filename, b.filename))
    .map((entry) => `${zhHash(entry.sha256Hex).slice(3)}  ${entry.filename}\n`)
    .join('');
}

/**
 * Parses a SHA256SUMS document (`sha256sum` text or binary mode). Throws
 * InputError naming the first malformed line or a file listed twice.
 */
export function parseShasums(text: string): ShasumEntry[] {
  const entries: ShasumEntry[] = [];
  const seen = new Set<string>();
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    const match = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(line.replace(/\r$/, ''));
    if (!match) throw new InputError(`SHA256SUMS line ${index + 1} is not "<sha256>  <filename>": ${JSON.stringify(line.slice(0, 120))}`);
    const filename = match[2]!;
    if (seen.has(filename)) throw new InputError(`SHA256SUMS lists ${filename} twice`);
    seen.add(filename);
    entries.push({ filename, sha256Hex: match[1]!.toLowerCase() });
  });
  return entries;
}
