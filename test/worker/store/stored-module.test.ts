import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { checkStoredModulePackage } from '../../../src/store/uploads/stored-module';
import { paxHeader, tarBytes, tarGz, zipStored, type TarEntry } from '../../fixtures/archives';

// The publish API's check of a stored .tar.gz module package (src/store/uploads/stored-module.ts), read in one
// streaming pass from the real (Miniflare) R2: pax and GNU long names count as the entry's name, and every
// entry the package rules refuse is refused naming the package.

const MAIN = 'variable "a" {}\n';
let n = 0;

async function check(entries: TarEntry[] | Uint8Array): Promise<void> {
  const bytes = entries instanceof Uint8Array ? entries : await tarGz(entries);
  const key = `test/stored-module/${++n}.tar.gz`;
  await env.REGISTRY_R2.put(key, bytes);
  return checkStoredModulePackage(env.REGISTRY_R2, key, bytes.byteLength, 'tar.gz', 'pkg.tar.gz');
}

/** A pax extended header giving the next entry's path. */
function pax(path: string): TarEntry {
  const body = ` path=${path}\n`;
  let length = body.length + 1;
  while (`${length}${body}`.length !== length) length += 1;
  return { name: 'PaxHeader', type: 'x', content: `${length}${body}` };
}

describe('a stored .tar.gz module package', () => {
  it('is accepted with files, directories, links inside it, and names longer than a ustar header holds', async () => {
    const long = `modules/${'a'.repeat(120)}/main.tf`;
    await expect(
      check([
        { name: 'main.tf', content: MAIN },
        { name: 'modules/', type: '5' },
        pax(long),
        { name: 'short-name-ignored.tf', content: MAIN },
        { name: '././@LongLink', type: 'L', content: `modules/${'b'.repeat(120)}/vars.tf\0` },
        { name: 'also-ignored.tf', content: MAIN },
        { name: 'latest.tf', type: '2', link: 'main.tf' },
      ]),
    ).resolves.toBeUndefined();
  });

  it('refuses what publish-module refuses, naming the package and the entry', async () => {
    await expect(check([{ name: 'main.tf', content: MAIN }, pax('../escape.tf'), { name: 'x.tf', content: MAIN }])).rejects.toThrow(
      /pkg\.tar\.gz: entry "\.\.\/escape\.tf" has a "\.\." path segment/,
    );
    await expect(
      check([
        { name: 'main.tf', content: MAIN },
        { name: '././@LongLink', type: 'L', content: '/abs.tf\0' },
        { name: 'x.tf', content: MAIN },
      ]),
    ).rejects.toThrow(/pkg\.tar\.gz: entry "\/abs\.tf" has an absolute path/);
    await expect(
      check([
        { name: 'main.tf', content: MAIN },
        { name: 'pipe', type: '6' },
      ]),
    ).rejects.toThrow(/pkg\.tar\.gz: entry "pipe" is a FIFO/);
    await expect(
      check([
        { name: 'main.tf', content: MAIN },
        { name: 'up', type: '2', link: '../../etc/passwd' },
      ]),
    ).rejects.toThrow(/pkg\.tar\.gz: link "up" points to \.\.\/\.\.\/etc\/passwd, outside the module/);
    await expect(check([{ name: 'sub/main.tf', content: MAIN }])).rejects.toThrow(/pkg\.tar\.gz.*has no \.tf or \.tofu file at its root/);
    await expect(check(new TextEncoder().encode('not a gzip stream at all'))).rejects.toThrow(/pkg\.tar\.gz: not valid gzip or tar/);
  });

  it("reads an entry's size from a pax record, as extractors do: a link hidden in data by the ustar size is checked", async () => {
    const hidden = tarBytes([{ name: 'x.tf', type: '2', link: '../../etc/passwd' }], false);
    await expect(check([{ name: 'main.tf', content: MAIN }, paxHeader({ size: '0' }), { name: 'decoy.txt', data: hidden }])).rejects.toThrow(
      /pkg\.tar\.gz: link "x\.tf" points to \.\.\/\.\.\/etc\/passwd, outside the module/,
    );
    const truncated = new Uint8Array(
      await new Response(
        new Blob([tarBytes([{ name: 'main.tf', content: MAIN }], false).subarray(0, 600)]).stream().pipeThrough(new CompressionStream('gzip')),
      ).arrayBuffer(),
    );
    await expect(check(truncated)).rejects.toThrow(/^pkg\.tar\.gz: not a valid tar archive \(it ends inside an entry: truncated\)$/);
  });

  it('stops at the end-of-archive blocks: what follows them is not read as entries', async () => {
    const archive = await tarGz([{ name: 'main.tf', content: MAIN }]);
    const gunzipped = new Uint8Array(await new Response(new Blob([archive]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer());
    const trailing = new Uint8Array(gunzipped.byteLength + 512);
    trailing.set(gunzipped);
    trailing.set(new TextEncoder().encode('/etc/passwd'), gunzipped.byteLength); // a header-looking block after the end
    const bytes = new Uint8Array(await new Response(new Blob([trailing]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer());
    await expect(check(bytes)).resolves.toBeUndefined();
  });
});

describe('a stored .zip module package', () => {
  it('is checked entry by entry with at most 3 R2 reads (directory, then one stream), whatever its number of entries', async () => {
    const files: Record<string, string> = { 'main.tf': MAIN };
    for (let i = 0; i < 500; i++) files[`files/f${i}.txt`] = `file ${i}\n`.repeat(20);
    const bytes = zipStored(files);
    expect(bytes.byteLength).toBeGreaterThan(70 * 1024); // its directory lies outside the tail: the most reads
    const key = `test/stored-module/${++n}.zip`;
    await env.REGISTRY_R2.put(key, bytes);
    let reads = 0;
    const counting = new Proxy(env.REGISTRY_R2, {
      get(target, property) {
        if (property === 'get') return (...args: Parameters<R2Bucket['get']>) => (reads++, target.get(...args));
        const value = Reflect.get(target, property);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await expect(checkStoredModulePackage(counting, key, bytes.byteLength, 'zip', 'pkg.zip')).resolves.toBeUndefined();
    expect(reads).toBeLessThanOrEqual(3);
  });
});
