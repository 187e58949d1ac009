import { beforeAll, describe, expect, it } from 'vitest';
import { zipDeflated, zipStored } from '../../fixtures/archives';
import { issue, publishModulePackage } from './api';

// A module .zip published over the publish API (POST /v1/publish/modules/…, PUT, commit) is checked on the stored
// bytes by the same function publish-module runs on a file (readModuleZip, src/protocol/module-zip.ts): each zip
// test/scripts/module/zip.test.ts refuses is refused here with a 400 and the same message, nothing published. Zips
// are built by test/fixtures/archives.ts and damaged in place, as the CLI's tests damage yazl's.

const MAIN = 'variable "a" {}\n';
let token: string;
let n = 0;

beforeAll(async () => {
  ({ token } = await issue('publish', ['zipmods'], { name: 'module-zip' }));
});

/** Offset of the `nth` (1-based) central directory header. */
function central(zip: Uint8Array, nth: number): number {
  let seen = 0;
  for (let at = 0; at + 4 <= zip.byteLength; at++) {
    if (zip[at] === 0x50 && zip[at + 1] === 0x4b && zip[at + 2] === 0x01 && zip[at + 3] === 0x02 && ++seen === nth) return at;
  }
  throw new Error(`no central header ${nth}`);
}

/** Publishes `zip` as module zipmods/<fresh name>/aws 1.0.0 (publishModulePackage). */
function publish(zip: Uint8Array) {
  return publishModulePackage(token, 'zipmods', `m${++n}`, 'zip', zip);
}

async function refused(zip: Uint8Array, message: RegExp): Promise<void> {
  const { status, errors, listed } = await publish(zip);
  expect(status, errors.join('\n')).toBe(400);
  expect(errors[0]).toMatch(/^m\d+-aws-1\.0\.0\.zip: /); // the uploaded file's name
  expect(errors[0]).toMatch(message);
  expect(listed).toBe(false);
}

describe('a module .zip published over the publish API', () => {
  it('is published when well formed: stored or deflated, with a directory and a link inside the package', async () => {
    const zip = zipStored({ 'main.tf': MAIN, 'modules/': '', 'modules/x/main.tf': MAIN, 'latest.tf': 'main.tf' });
    const link = central(zip, 4);
    new DataView(zip.buffer).setUint32(link + 38, (0o120777 << 16) >>> 0, true);
    const stored = await publish(zip);
    expect(stored.status, stored.errors.join('\n')).toBe(200);
    expect(stored.listed).toBe(true);
    const deflated = await publish(await zipDeflated({ 'main.tf': MAIN, 'README.md': '# x\n' }));
    expect(deflated.status, deflated.errors.join('\n')).toBe(200);
    expect(deflated.listed).toBe(true);
  });

  const view = (zip: Uint8Array) => new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const LOCAL = [0x50, 0x4b, 0x03, 0x04];
  /** Offset of the `nth` (1-based) local header. */
  const local = (zip: Uint8Array, nth: number) => {
    let seen = 0;
    for (let at = 0; at + 4 <= zip.byteLength; at++) if (LOCAL.every((b, i) => zip[at + i] === b) && ++seen === nth) return at;
    throw new Error(`no local header ${nth}`);
  };

  it('refuses an entry stored twice (which copy would Terraform unpack?)', async () => {
    const zip = zipStored({ 'main.tf': MAIN, 'data.bin': 'one', 'data.biz': 'two' });
    // Renamed in place, in both headers: the fixture writer takes one entry per name.
    for (const at of [local(zip, 3) + 30, central(zip, 3) + 46]) zip[at + 7] = 'n'.charCodeAt(0);
    await refused(zip, /entry "data\.bin" is stored twice; rebuild the zip$/);
  });

  it('refuses two entries sharing their bytes (a zip bomb by overlap)', async () => {
    const zip = zipStored({ 'main.tf': MAIN, 'data.bin': 'y'.repeat(100) });
    view(zip).setUint32(central(zip, 2) + 42, 0, true); // its local header offset: the first entry's
    await refused(zip, /entry "(main\.tf|data\.bin)" overlaps the entry stored before it; rebuild the zip$/);
  });

  it('refuses an entry whose data runs into the central directory', async () => {
    const zip = await zipDeflated({ 'main.tf': MAIN, 'data.bin': 'y'.repeat(100) });
    const at = central(zip, 2) + 20; // compressed size
    view(zip).setUint32(at, view(zip).getUint32(at, true) + 8, true);
    await refused(zip, /entry "data\.bin" runs past the end of the file's entries \(into its central directory\); rebuild the zip$/);
  });

  it('refuses a damaged local header, of an entry the check does not inflate', async () => {
    const zip = zipStored({ 'main.tf': MAIN, 'data.bin': 'y' });
    view(zip).setUint32(local(zip, 2), 0, true);
    await refused(zip, /entry "data\.bin" has a damaged local header; rebuild the zip$/);
  });

  it('refuses an encrypted entry or an unsupported compression method', async () => {
    const encrypted = zipStored({ 'main.tf': MAIN, 'data.bin': 'y' });
    const flags = central(encrypted, 2) + 8;
    view(encrypted).setUint16(flags, view(encrypted).getUint16(flags, true) | 0x1, true);
    await refused(encrypted, /entry "data\.bin" is encrypted; module packages cannot be$/);
    const bzip2 = zipStored({ 'main.tf': MAIN, 'data.bin': 'y' });
    view(bzip2).setUint16(central(bzip2, 2) + 10, 12, true);
    await refused(bzip2, /entry "data\.bin" uses compression method 12; only stored and deflate are read by Terraform$/);
  });

  it('refuses a link leaving the package (made on Unix or macOS), read from its stored or deflated bytes', async () => {
    for (const make of [zipStored, zipDeflated]) {
      const zip = await make({ 'main.tf': MAIN, 'x.tf': '../../etc/passwd' });
      const at = central(zip, 2);
      view(zip).setUint32(at + 38, (0o120777 << 16) >>> 0, true);
      zip[at + 5] = 19; // made by macOS: still a symlink
      await refused(zip, /link "x\.tf" points to \.\.\/\.\.\/etc\/passwd, outside the module; refused$/);
    }
  });

  it('refuses a link whose target is over 4096 bytes before inflating it (its bytes would be held whole)', async () => {
    const zip = zipStored({ 'main.tf': MAIN, 'x.tf': 'a/'.repeat(2100) });
    view(zip).setUint32(central(zip, 2) + 38, (0o120777 << 16) >>> 0, true);
    await refused(zip, /link "x\.tf" has a target over 4096 bytes; refused$/);
  });

  it('refuses a deflated link that does not inflate to its recorded size', async () => {
    const zip = await zipDeflated({ 'main.tf': MAIN, 'x.tf': 'main.tf' }, { 'x.tf': 3 });
    view(zip).setUint32(central(zip, 2) + 38, (0o120777 << 16) >>> 0, true);
    await refused(zip, /entry "x\.tf" cannot be read \(inflates to 4 bytes, its header says 3\); rebuild the zip$/);
  });
});

describe('a module .zip of many entries', () => {
  // The R2 reads are counted in test/worker/store/stored-module.test.ts.
  it('is published: its entries are checked in one pass over the stored object', async () => {
    const files: Record<string, string> = { 'main.tf': MAIN };
    for (let i = 0; i < 300; i++) files[`files/f${i}.txt`] = `file ${i}\n`.repeat(20);
    const { status, errors, listed } = await publish(await zipDeflated(files));
    expect(status, errors.join('\n')).toBe(200);
    expect(listed).toBe(true);
  });
});
