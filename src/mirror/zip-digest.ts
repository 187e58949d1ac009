import { InputError } from '../protocol/errors';
import { storedZipEntries, storedZipH1, type RangeReader } from '../store/uploads/stored-zip';
import { UpstreamError } from './upstream-http';

/**
 * Go dirhash Hash1 (`h1:`) and entry names of a pulled-through zip stored in
 * R2, computed in the Worker by the publish API's reader
 * (src/store/uploads/stored-zip.ts over src/protocol/zip.ts): the central
 * directory from the object's tail, each entry inflated and hashed by range
 * in native code, never the whole archive in memory. Directories count with
 * empty contents, as in Go's dirhash.HashZip and scripts/lib/provider/archive.ts.
 */

export interface ZipDigest {
  h1: string;
  /** Entry names in stored order. */
  names: string[];
}

/**
 * Reads the zip stored under `key` (`size` bytes). Throws UpstreamError
 * ("archive check failed: KEY: …") when it is not a zip the registry
 * accepts (ZIP64, damaged, encrypted, another compression method, an unsafe
 * or repeated entry name, an entry that does not inflate to its size).
 */
export async function zipDigest(bucket: RangeReader, key: string, size: number): Promise<ZipDigest> {
  try {
    const entries = await storedZipEntries(bucket, key, size, key);
    return { h1: await storedZipH1(bucket, key, size, entries, key), names: entries.map((e) => e.name) };
  } catch (error) {
    if (error instanceof InputError) throw new UpstreamError(`archive check failed: ${error.message}`);
    throw error;
  }
}
