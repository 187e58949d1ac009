import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { sha256Hex } from '../../../src/protocol/index';
import type { ReleaseFile } from '../../../src/store/providers/write';

/**
 * The two kinds of file a CLI publish or mirror run hands to the store:
 * small ones held in memory (SHA256SUMS, signatures) and archives streamed
 * from disk (never read whole into memory). Neither throws when made; a
 * missing file fails when the store opens it.
 */

/** A file whose bytes are in memory; its SHA-256 and size computed here. */
export function memoryFile(filename: string, bytes: Uint8Array, contentType: string): ReleaseFile {
  return { filename, sha256Hex: sha256Hex(bytes), size: bytes.byteLength, contentType, open: () => bytes };
}

/** A file on disk at `path`, already hashed by the caller; streamed in 1 MiB chunks each time the store opens it. */
export function diskFile(filename: string, path: string, digest: { sha256Hex: string; size: number }, contentType: string): ReleaseFile {
  return {
    filename,
    sha256Hex: digest.sha256Hex,
    size: digest.size,
    contentType,
    open: () => Readable.toWeb(createReadStream(path, { highWaterMark: 1 << 20 })) as ReadableStream,
  };
}
