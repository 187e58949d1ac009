import { beforeAll, describe, expect, it } from 'vitest';
import { address, fakeRelease, get, resolve, seed } from './helpers';

// The hashes the Worker serves, checked against the served bytes with WebCrypto and the documented
// formats written out here — not against the fixture builder's record, which shares the code under test.

const provider = address('acme', 'oracle');
const PLATFORMS = ['linux_amd64', 'darwin_arm64', 'windows_amd64'];

beforeAll(async () => {
  await seed([fakeRelease(provider, '2.3.4', PLATFORMS)]);
});

const hex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');
const sha256 = async (data: BufferSource | string) => crypto.subtle.digest('SHA-256', typeof data === 'string' ? new TextEncoder().encode(data) : data);
/** dirhash Hash1 of a zip holding one file whose SHA-256 is `fileSha256`: base64 SHA-256 of "hex␠␠name\n". */
const h1OfOneFile = async (fileSha256: string, name: string) => `h1:${btoa(String.fromCharCode(...new Uint8Array(await sha256(`${fileSha256}  ${name}\n`))))}`;

interface Download {
  filename: string;
  shasum: string;
  download_url: string;
  shasums_url: string;
  packages: Record<string, { hashes: string[]; package_size: number }>;
}

describe('served hashes, checked independently', () => {
  it('find-a-package: shasum, SHA256SUMS line, zh, h1 and size agree with the bytes served', async () => {
    const path = '/v1/providers/acme/oracle/2.3.4/download/linux/amd64';
    const doc = await (await get(path)).json<Download>();
    const sums = await (await get(resolve(doc.shasums_url, path))).text();
    const lines = sums.trimEnd().split('\n');
    expect(lines).toHaveLength(PLATFORMS.length);
    for (const platform of PLATFORMS) {
      const filename = `terraform-provider-oracle_2.3.4_${platform}.zip`;
      const archive = await (await get(resolve(doc.download_url.replace(doc.filename, filename), path))).arrayBuffer();
      const digest = hex(await sha256(archive));
      expect(lines, filename).toContain(`${digest}  ${filename}`);
      // The fixture's stand-in archive "holds" one executable whose contents hash like the archive itself.
      expect(doc.packages[platform], platform).toEqual({
        hashes: [`zh:${digest}`, await h1OfOneFile(digest, 'terraform-provider-oracle_v2.3.4')],
        package_size: archive.byteLength,
      });
      if (platform === 'linux_amd64') expect(doc.shasum).toBe(digest);
    }
  });

  it('mirror VERSION.json: h1 and zh of every archive', async () => {
    const path = '/v1/mirror/registry.example.com/acme/oracle/2.3.4.json';
    const doc = await (await get(path)).json<{ archives: Record<string, { url: string; hashes: string[] }> }>();
    expect(Object.keys(doc.archives).sort()).toEqual([...PLATFORMS].sort());
    for (const [platform, entry] of Object.entries(doc.archives)) {
      const digest = hex(await sha256(await (await get(resolve(entry.url, path))).arrayBuffer()));
      expect(entry.hashes, platform).toEqual([await h1OfOneFile(digest, 'terraform-provider-oracle_v2.3.4'), `zh:${digest}`]);
    }
  });
});
