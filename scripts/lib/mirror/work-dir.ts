import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processExists } from '../process-exists';

const PREFIX = 'edge-registry-mirror-';

/**
 * Makes a sync's scratch folder for downloads, named after this process
 * (`edge-registry-mirror-PID-XXXXXX` in the temp directory), and first
 * removes the folders of earlier syncs whose process is gone: a sync killed
 * mid-download (SIGKILL, a CI timeout) cannot remove its own, and the next
 * run — the one that completes the interrupted work — cleans up after it.
 * The caller removes the returned folder when it is done.
 */
export function makeSyncWorkDir(): string {
  const dir = tmpdir();
  for (const name of safeList(dir)) {
    const pid = Number(/^edge-registry-mirror-(\d+)-/.exec(name)?.[1]);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && !processExists(pid)) {
      rmSync(join(dir, name), { recursive: true, force: true });
    }
  }
  return mkdtempSync(join(dir, `${PREFIX}${process.pid}-`));
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => name.startsWith(PREFIX));
  } catch {
    return [];
  }
}
