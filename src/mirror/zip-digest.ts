import { InputError } from '../protocol/errors';
import { readZipDirectory, zipH1 } from '../protocol/zip-reader';
import { storedZip, type RangeReader } from '../store/uploads/stored-zip';
import { UpstreamError } from './upstream-http';

/**
 * Go dirhash Hash1 (`h1:`) and entry names of a pulled-through zip stored in
 * R2, computed in the Worker by the publish API's reader
 * (src/protocol/zip-reader.ts over src/store/uploads/stored-zip.ts): the central
 * directory from the object's tail, each entry inflated and hashed by range
 * in native code, never the whole archive in memory. Directories count with
 * empty contents, as in Go's dirhash.HashZip; the CLI runs the same reader on a file.
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
 * or repeated entry name, overlapping entries, an entry that does not
 * inflate to its size).
 */
export async function zipDigest(bucket: RangeReader, key: string, size: number): Promise<ZipDigest> {
  try {
    const zip = storedZip(bucket, key, size);
    const directory = await readZipDirectory(zip, key);
    return { h1: await zipH1(zip, directory, key), names: directory.entries.map((e) => e.name) };
  } catch (error) {
    if (error instanceof InputError) throw new UpstreamError(`archive check failed: ${error.message}`);
    throw error;
  }
}
