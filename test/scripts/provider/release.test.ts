import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readRelease } from '../../../scripts/lib/provider/release';
import { zipBuffers } from '../../../scripts/lib/provider/zip-binary';
import { tempDir, writeDist } from '../helpers';

// readRelease's manifest rules, checked without a store: the protocols a release declares are served to
// every Terraform that installs it, so only a non-empty list of "N.M" strings is accepted.

const { dir, cleanup } = tempDir('release');
afterAll(cleanup);
let counter = 0;

async function withManifest(manifest: unknown): Promise<string> {
  const d = await writeDist(join(dir, `dist-${++counter}`), 'x', '1.0.0', { platforms: ['linux_amd64'], protocols: null });
  writeFileSync(join(d, 'terraform-provider-x_1.0.0_manifest.json'), JSON.stringify(manifest));
  return d;
}

describe('manifest protocol_versions', () => {
  it('are read and de-duplicated', async () => {
    const plan = await readRelease({ paths: [await withManifest({ version: 1, metadata: { protocol_versions: ['6.0', '5.0', '6.0'] } })] });
    expect(plan.protocols).toEqual(['6.0', '5.0']);
  });

  it('refuses an empty list, non-strings and malformed versions, naming the manifest', async () => {
    for (const protocols of [[], [6], ['6'], ['six'], '6.0']) {
      const path = await withManifest({ version: 1, metadata: { protocol_versions: protocols } });
      await expect(readRelease({ paths: [path] }), JSON.stringify(protocols)).rejects.toMatchObject({
        name: 'InputError',
        message: expect.stringMatching(/_manifest\.json: metadata\.protocol_versions must be a non-empty list like \["5\.0"\] or \["6\.0"\]$/),
      });
    }
  });
});

describe('archives', () => {
  it('refuses an empty provider executable, naming the archive', async () => {
    const d = await writeDist(join(dir, `dist-${++counter}`), 'x', '1.0.0', { platforms: ['linux_amd64'] });
    const path = join(d, 'terraform-provider-x_1.0.0_linux_amd64.zip');
    writeFileSync(path, await zipBuffers({ 'terraform-provider-x_v1.0.0': '' }));
    await expect(readRelease({ paths: [d] })).rejects.toMatchObject({
      name: 'InputError',
      message: `archive ${path}: executable terraform-provider-x_v1.0.0 is empty; rebuild the provider`,
    });
  });
});
