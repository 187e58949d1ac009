import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRelease } from '../../scripts/lib/provider/release';
import { InputError } from '../../src/protocol/errors';
import { tempDir, writeDist } from './helpers';

/**
 * What a dist/ directory may hold besides regular release files: symlinks
 * are followed only to files inside it; anything else named like a release
 * file is refused (never silently left out of a publish that exits 0), and
 * other entries are listed as ignored. An empty directory says so.
 */

const { dir, cleanup } = tempDir('dist-dir');
afterAll(() => cleanup());

const zipName = (platform: string) => `terraform-provider-linky_1.0.0_${platform}.zip`;
let counter = 0;

/** A dist with linux_amd64 and darwin_arm64 zips, and a store of files outside it. */
async function fixture(): Promise<{ dist: string; outside: string }> {
  const base = join(dir, `case-${counter++}`);
  const outside = await writeDist(join(base, 'outside'), 'linky', '1.0.0', { platforms: ['windows_amd64'], protocols: null });
  const dist = await writeDist(join(base, 'dist'), 'linky', '1.0.0', { platforms: ['linux_amd64', 'darwin_arm64'] });
  return { dist, outside };
}

describe('a dist directory', () => {
  it('follows a symlink to a release file inside the directory, and says so', async () => {
    const { dist } = await fixture();
    mkdirSync(join(dist, 'build'));
    writeFileSync(join(dist, 'build', 'w.zip'), readFileSync(join(dist, zipName('linux_amd64'))));
    // Another platform's zip as a symlink to a file inside dist/ (the executable's name carries no platform, so linux_amd64's zip is valid for it).
    symlinkSync(join(dist, zipName('linux_amd64')), join(dist, 'terraform-provider-linky_1.0.0_linux_arm64.zip'));
    const plan = await readRelease({ paths: [dist] });
    try {
      expect(plan.archives.map((a) => a.filename)).toEqual([zipName('darwin_arm64'), zipName('linux_amd64'), zipName('linux_arm64')]);
      expect(plan.notes.join('\n')).toMatch(
        /terraform-provider-linky_1\.0\.0_linux_arm64\.zip is a symlink to terraform-provider-linky_1\.0\.0_linux_amd64\.zip in the same directory; published its contents/,
      );
      expect(plan.notes.join('\n')).toMatch(/ignored in .*: build\//);
    } finally {
      plan.cleanup();
    }
  });

  it('refuses a release file that is a symlink out of the directory (zip, SHA256SUMS or signature)', async () => {
    for (const name of [zipName('windows_amd64'), 'terraform-provider-linky_1.0.0_SHA256SUMS', 'terraform-provider-linky_1.0.0_SHA256SUMS.sig']) {
      const { dist, outside } = await fixture();
      const target = join(outside, name);
      if (!name.endsWith('.zip')) writeFileSync(target, 'x');
      symlinkSync(target, join(dist, name));
      const attempt = readRelease({ paths: [dist] });
      await expect(attempt, name).rejects.toBeInstanceOf(InputError);
      await expect(readRelease({ paths: [dist] })).rejects.toThrow(
        new RegExp(`${name.replace(/\./g, '\\.')} is a symlink to .*outside the directory; only symlinks to files inside .* are followed`),
      );
    }
  });

  it('refuses a dangling symlink or a directory named like a release file', async () => {
    const dangling = await fixture();
    symlinkSync(join(dangling.dist, 'nowhere.zip'), join(dangling.dist, zipName('linux_arm64')));
    await expect(readRelease({ paths: [dangling.dist] })).rejects.toThrow(/linux_arm64\.zip is a dangling symlink/);

    const directory = await fixture();
    mkdirSync(join(directory.dist, zipName('linux_arm64')));
    await expect(readRelease({ paths: [directory.dist] })).rejects.toThrow(/linux_arm64\.zip is not a regular file \(a directory\)/);
  });

  it('lists stray files and directories as ignored, and symlinks to non-release files', async () => {
    const { dist, outside } = await fixture();
    writeFileSync(join(dist, 'config.yaml'), 'project_name: linky\n');
    writeFileSync(join(dist, 'artifacts.json'), '[]');
    mkdirSync(join(dist, 'terraform-provider-linky_linux_amd64_v1'));
    symlinkSync(join(outside, zipName('windows_amd64')), join(dist, 'latest'));
    const plan = await readRelease({ paths: [dist] });
    try {
      expect(plan.archives).toHaveLength(2);
      expect(plan.notes.join('\n')).toMatch(
        /ignored in .* \(not release files\): artifacts\.json, config\.yaml, latest \(a symlink to .*, outside the directory\), terraform-provider-linky_linux_amd64_v1\//,
      );
    } finally {
      plan.cleanup();
    }
  });

  it('says an empty directory is empty', async () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    await expect(readRelease({ paths: [empty] })).rejects.toThrow(
      /empty is empty: expected a goreleaser dist\/ with terraform-provider-TYPE_VERSION_OS_ARCH\.zip files/,
    );
  });
});
