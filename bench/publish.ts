import { execFile } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, stat, writeFile } from 'node:fs/promises';
import { inflateRawSync } from 'node:zlib';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as openpgp from 'openpgp';
import { inspectArchive, sha256File } from '../scripts/lib/provider/archive';
import { publishRelease } from '../scripts/lib/provider/publish';
import { zipBuffers } from '../scripts/lib/provider/zip-binary';

const run = promisify(execFile);

export interface PublishFigures {
  hashing: {
    fileMb: number;
    /** What the publish step runs on every archive: zh and h1 in one pass (inflating the entries). */
    function: string;
    mbPerSecond: number;
    sha256sumMbPerSecond: number;
    /** The archive's SHA-256 alone (scripts/lib/provider/archive.ts sha256File). */
    sha256FileMbPerSecond: number;
    /** The same work with standard tools: `unzip -p FILE | sha256sum` (null without unzip). */
    unzipPipeMbPerSecond: number | null;
    /**
     * The floor for zh + h1 in one Node thread: the whole file read at once,
     * SHA-256 of it, and every entry inflated (zlib, synchronously) and
     * SHA-256-hashed — the least work h1 needs (inflateAndHashFloor).
     */
    floorMbPerSecond: number;
  };
  localPublishSeconds: number;
  /** Until the first upload starts: config, reading and hashing the archives, signing. */
  readAndHashSeconds: number;
  /** The uploads into the local R2 and the KV documents. */
  writeSeconds: number;
  publishHow: string;
}

const ARCHIVE_MB = 50;

/**
 * Publish-side figures on a provider-like archive (a deflated zip of a
 * 4-bits-per-byte executable, compressing about 2:1 as Go binaries do):
 * the publish step's hashing (inspectArchive) and sha256sum on the same
 * file, best of three (one in --quick) with the page cache warm; then a whole local publish
 * (publishRelease, as `npm run publish-provider` runs it) of 3 × 50 MB
 * archives into a fresh state.
 */
export async function benchPublish(work: string, quick: boolean): Promise<PublishFigures> {
  const tries = quick ? 1 : 3;
  const dist = join(work, 'publish-dist');
  await mkdir(dist, { recursive: true });
  const first = join(dist, 'terraform-provider-heavy_1.0.0_linux_amd64.zip');
  await writeFile(first, await providerLikeZip('terraform-provider-heavy_v1.0.0', ARCHIVE_MB * 1024 * 1024));
  for (const platform of ['linux_arm64', 'darwin_arm64']) await copyFile(first, join(dist, `terraform-provider-heavy_1.0.0_${platform}.zip`));
  const mb = (await stat(first)).size / 1024 / 1024;

  const sha256sum = await best(tries, async () => (await run('sha256sum', [first])).stdout.slice(0, 64));
  const whole = await best(tries, async () => (await sha256File(first)).sha256Hex);
  const inspect = await best(tries, async () => (await inspectArchive(first)).sha256Hex);
  const floor = await best(tries, async () => inflateAndHashFloor(first));
  if (whole.value !== sha256sum.value || inspect.value !== sha256sum.value || floor.value !== sha256sum.value)
    throw new Error('the publish hashing disagrees with sha256sum');
  let unzipPipe: { seconds: number } | null = null;
  if (!quick) {
    try {
      unzipPipe = await best(tries, () => run('sh', ['-c', 'unzip -p "$1" | sha256sum', 'sh', first]));
    } catch {
      unzipPipe = null; // no unzip on this machine
    }
  }

  const keyFile = join(work, 'bench-signing-key.asc');
  const { privateKey } = await openpgp.generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'bench' }], format: 'armored' });
  await writeFile(keyFile, privateKey);
  const started = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
  let firstUpload: number | null = null;
  const result = await publishRelease({
    paths: [dist],
    namespace: 'bench',
    persistTo: join(work, 'publish-state'),
    hostname: 'registry.example.com',
    keyFile,
    keysDir: join(work, 'keys'),
    processEnv: {},
    log: (line) => {
      if (firstUpload === null && /^\s*uploading /.test(line)) firstUpload = elapsed();
    },
  });
  const seconds = elapsed();
  if (result.status !== 'published' || result.platforms.length !== 3) throw new Error(`publish: ${JSON.stringify(result)}`);

  return {
    hashing: {
      fileMb: Math.round(mb),
      function: 'inspectArchive (zh + h1)',
      mbPerSecond: mb / inspect.seconds,
      sha256sumMbPerSecond: mb / sha256sum.seconds,
      sha256FileMbPerSecond: mb / whole.seconds,
      unzipPipeMbPerSecond: unzipPipe ? mb / unzipPipe.seconds : null,
      floorMbPerSecond: mb / floor.seconds,
    },
    localPublishSeconds: seconds,
    readAndHashSeconds: firstUpload ?? seconds,
    writeSeconds: seconds - (firstUpload ?? seconds),
    publishHow: 'publishRelease: read, hash, sign, write 3 × 50 MB into a fresh local state',
  };
}

async function best<T>(tries: number, fn: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  let result: { value: T; seconds: number } | null = null;
  for (let i = 0; i < tries; i++) {
    const start = process.hrtime.bigint();
    const value = await fn();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (!result || seconds < result.seconds) result = { value, seconds };
  }
  return result!;
}

/** A zip of about `archiveBytes` holding one executable of random nibbles (deflates ~2:1). */
function providerLikeZip(name: string, archiveBytes: number): Promise<Buffer> {
  const data = randomFillSync(Buffer.alloc(archiveBytes * 2));
  for (let i = 0; i < data.length; i++) data[i]! &= 0x0f;
  return zipBuffers({ [name]: data }, { compress: true });
}

/**
 * The floor of what zh + h1 cost in one Node thread: read the whole zip,
 * SHA-256 it, and inflate and SHA-256 every entry, with no streaming, no
 * validation and no dirhash assembly. Returns the file's SHA-256 (checked
 * against sha256sum). Handles stored and deflated entries (what providers use).
 */
export function inflateAndHashFloor(path: string): string {
  const zip = readFileSync(path);
  const whole = createHash('sha256').update(zip).digest('hex');
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error(`${path}: no end of central directory`);
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < count; i++) {
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const dataStart = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(dataStart, dataStart + compressed);
    createHash('sha256')
      .update(method === 8 ? inflateRawSync(data) : data)
      .digest();
    at += 46 + nameLength + extraLength + commentLength;
  }
  return whole;
}
