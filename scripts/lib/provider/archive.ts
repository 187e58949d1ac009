import { createReadStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { readZipDirectory, zipH1 } from '../../../src/protocol/zip-reader';
import { openZipFile, type ProgressSink } from './zip-file';

export type { ProgressSink } from './zip-file';

/**
 * Reading a provider package (zip) for publish and mirror: its SHA-256
 * (`zh:`), Go's dirhash Hash1 over its entries (`h1:`) and the entries, in
 * one front-to-back pass over the file. The zip is read and checked by the
 * Worker's own reader (src/protocol/zip-reader.ts), over the file
 * (./zip-file.ts): what the CLI accepts, the publish API accepts.
 */

export interface ArchiveEntry {
  /** Name as stored (UTF-8). */
  name: string;
  /** Uncompressed size. */
  size: number;
  /** Unix mode bits when the zip was made on Unix, else null. */
  unixMode: number | null;
  isDirectory: boolean;
}

export interface ArchiveDigest {
  path: string;
  /** Size of the zip in bytes. */
  size: number;
  /** Hex SHA-256 of the zip (`zh:` without the prefix; the registry's `shasum`). */
  sha256Hex: string;
  /** Go dirhash Hash1 of the zip's entries, "h1:…". */
  h1: string;
  /** Sorted by name. */
  entries: ArchiveEntry[];
}

const READ_CHUNK = 1 << 20;

/**
 * Reads the zip at `path` once and returns its digests and entries. Throws
 * InputError ("archive PATH: …; rebuild …") when it cannot be opened or is
 * not a zip the registry accepts: bad structure or bytes after it, ZIP64 or
 * split, an unsupported compression method or encryption, an entry name that
 * is not UTF-8, absolute, with "..", a backslash or a newline, a duplicate
 * entry, overlapping entries, an entry that does not inflate to its recorded
 * size or CRC-32 (Go's archive/zip, which Terraform uses, refuses most of
 * those; the rest are refused so a package unpacks one way everywhere).
 */
export async function inspectArchive(path: string, onProgress?: ProgressSink): Promise<ArchiveDigest> {
  const label = `archive ${path}`;
  const file = await openZipFile(path, label, onProgress);
  try {
    const directory = await readZipDirectory(file, label);
    const h1 = await zipH1(file, directory, label);
    const sha256Hex = await file.sha256Hex();
    const entries = directory.entries
      .map((e) => ({ name: e.name, size: e.uncompressedSize, unixMode: e.unixMode, isDirectory: e.isDirectory }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { path, size: file.size, sha256Hex, h1, entries };
  } finally {
    await file.close();
  }
}

/** Streams a file through node:crypto's SHA-256; returns hex digest and size. */
export async function sha256File(path: string): Promise<{ sha256Hex: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: READ_CHUNK }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha256Hex: hash.digest('hex'), size };
}
