import { execFile } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import yazl from 'yazl';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');

export interface PublishFigures {
  hashing: {
    fileMb: number;
    function: string;
    mbPerSecond: number;
    sha256sumMbPerSecond: number;
    inspectFunction?: string;
    inspectMbPerSecond?: number;
  } | null;
  localPublishSeconds: number | null;
  publishHow?: string;
  pending?: string;
}

/**
 * Publish-side figures: the publish script's archive hashing against
 * `sha256sum` on the same file (best of two runs each, page cache warm), and
 * a whole local publish of 3 × 50 MB archives. Uses the scripts' own modules;
 * whatever is not there yet is reported as pending.
 */
export async function benchPublish(work: string, quick: boolean): Promise<PublishFigures> {
  const archiveModule = join(root, 'scripts', 'lib', 'archive.ts');
  if (!existsSync(archiveModule)) return { hashing: null, localPublishSeconds: null, pending: 'scripts/lib/archive.ts is not there yet' };
  const lib = (await import(archiveModule)) as {
    sha256File(path: string): Promise<{ sha256Hex: string; size: number }>;
    inspectArchive(path: string): Promise<{ sha256Hex: string; h1: string }>;
  };

  const fileMb = quick ? 64 : 200;
  const path = join(work, 'hashing.zip');
  await writeFile(path, await storedZip('terraform-provider-bench_v1.0.0', randomFillSync(Buffer.alloc(fileMb * 1024 * 1024))));
  const mb = fileMb + 0; // the zip is a few hundred bytes larger; negligible

  const sha256sum = await best(async () => {
    const { stdout } = await run('sha256sum', [path]);
    return stdout.slice(0, 64);
  });
  const ours = await best(async () => (await lib.sha256File(path)).sha256Hex);
  if (ours.value !== sha256sum.value) throw new Error(`sha256File disagrees with sha256sum: ${ours.value} ≠ ${sha256sum.value}`);
  const inspect = await best(async () => (await lib.inspectArchive(path)).sha256Hex);
  if (inspect.value !== sha256sum.value) throw new Error('inspectArchive disagrees with sha256sum');

  const publish = await localPublish(work);
  return {
    hashing: {
      fileMb,
      function: 'sha256File (zh)',
      mbPerSecond: mb / ours.seconds,
      sha256sumMbPerSecond: mb / sha256sum.seconds,
      inspectFunction: 'inspectArchive',
      inspectMbPerSecond: mb / inspect.seconds,
    },
    ...publish,
  };
}

/** Seconds for a local publish of 3 × 50 MB archives through the publish CLI, once it exists. */
async function localPublish(_work: string): Promise<Pick<PublishFigures, 'localPublishSeconds' | 'publishHow' | 'pending'>> {
  if (!existsSync(join(root, 'scripts', 'publish-provider.ts'))) {
    return { localPublishSeconds: null, pending: 'scripts/publish-provider.ts is not there yet' };
  }
  return { localPublishSeconds: null, pending: 'not wired yet' };
}

async function best<T>(fn: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  let result: { value: T; seconds: number } | null = null;
  for (let i = 0; i < 2; i++) {
    const start = process.hrtime.bigint();
    const value = await fn();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (!result || seconds < result.seconds) result = { value, seconds };
  }
  return result!;
}

/** A zip holding one stored (uncompressed) entry, so making it costs nothing but the write. */
export function storedZip(name: string, data: Buffer): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(data, name, { compress: false, mtime: new Date('2026-01-01T00:00:00Z'), mode: 0o100755 });
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}
