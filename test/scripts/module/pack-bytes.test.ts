import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { packModule } from '../../../scripts/lib/module/pack';

/**
 * The published bytes of a module directory must never change: re-publishing
 * an identical directory is `unchanged` only while packModule gives the same
 * .tar.gz as the version that first published it. This fixture covers every
 * header form the packer writes — plain ustar, a name split into ustar's
 * prefix, names only pax can carry (too long, or not ASCII), empty and
 * executable files, data over one 64 KiB zlib window — and its digest is
 * pinned from the packer as it was before the tar writer was shared with the
 * module proxy (tar-stream 3.2.2, zlib level 9). A change here is a change
 * to every existing module release.
 */

const work = mkdtempSync(join(tmpdir(), 'pack-bytes-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function fixture(): string {
  const dir = join(work, 'module');
  const files: Record<string, string | Uint8Array> = {
    'main.tf': 'variable "a" {\n  type = string\n}\noutput "b" {\n  value = var.a\n}\n',
    'README.md': '# Fixture\n\nNot changed, ever.\n',
    'empty.tf': '',
    'scripts/run.sh': '#!/bin/sh\necho run\n',
    [`${'a/'.repeat(60)}prefixed.tf`]: 'locals {}\n',
    [`${'d'.repeat(120)}/pax-directory.tf`]: '# a directory name over 100 bytes\n',
    [`modules/${'n'.repeat(110)}.tf`]: '# a file name over 100 bytes\n',
    'modules/ünïcødé/日本.tf': '# UTF-8 names go to pax\n',
    'data/big.bin': new Uint8Array(200_000).map((_, i) => (i * 7919 + (i >> 9)) & 255),
    '.terraform.lock.hcl': '# root lock, packed\n',
    '.git/HEAD': 'left out',
  };
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  chmodSync(join(dir, 'scripts/run.sh'), 0o755);
  chmodSync(join(dir, 'main.tf'), 0o640); // any non-executable mode is packed as 0644
  return dir;
}

describe('the bytes of a packed module directory', () => {
  it('are the same as the packer has always written (pinned digest)', async () => {
    const packed = await packModule(fixture(), 100 * 1000 * 1000);
    expect(packed.files.map((f) => f.path)).toContain('modules/ünïcødé/日本.tf');
    expect(createHash('sha256').update(packed.bytes).digest('hex')).toBe('531271508a5e9aba66a3b00b636a325a3aab28d8b88a6f87a3145cf10364cf49');
  });
});
