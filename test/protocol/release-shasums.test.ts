import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/protocol/errors';
import { checkReleaseShasums } from '../../src/protocol/release-shasums';

/**
 * The SHA256SUMS checks the publish CLI and the publish API share: each
 * refusal names the file and the fix, and a SHA256SUMS that passes is
 * returned line by line.
 */

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const archives = [
  { filename: 'terraform-provider-x_1.0.0_linux_amd64.zip', sha256Hex: A, shown: 'dist/linux.zip' },
  { filename: 'terraform-provider-x_1.0.0_darwin_arm64.zip', sha256Hex: B, shown: 'dist/darwin.zip' },
];
const isArchive = (name: string) => name.endsWith('.zip');
const sums = (text: string) => new TextEncoder().encode(text);
const refused = (bytes: Uint8Array, pattern: RegExp) => {
  expect(() => checkReleaseShasums(bytes, archives, 'SUMS', isArchive)).toThrow(InputError);
  expect(() => checkReleaseShasums(bytes, archives, 'SUMS', isArchive)).toThrow(pattern);
};

describe('checkReleaseShasums', () => {
  it('returns the lines of a SHA256SUMS that lists every archive with its SHA-256, other lines allowed', () => {
    const text = `${A}  ${archives[0]!.filename}\n${B}  ${archives[1]!.filename}\n${A}  terraform-provider-x_1.0.0_manifest.json\n`;
    expect(checkReleaseShasums(sums(text), archives, 'SUMS', isArchive).map((e) => e.filename)).toEqual([
      archives[0]!.filename,
      archives[1]!.filename,
      'terraform-provider-x_1.0.0_manifest.json',
    ]);
  });

  it('refuses text that is not UTF-8 or not sha256sum output', () => {
    refused(new Uint8Array([0xff, 0xfe, 0x00]), /^SUMS: not UTF-8 text/);
    refused(sums('not a sums line\n'), /^SUMS: SHA256SUMS line 1 is not .*regenerate it with sha256sum/);
  });

  it('refuses a missing line and a line with another SHA-256, naming the archive as shown', () => {
    refused(sums(`${A}  ${archives[0]!.filename}\n`), /has no line for terraform-provider-x_1\.0\.0_darwin_arm64\.zip/);
    refused(sums(`${A}  ${archives[0]!.filename}\n${A}  ${archives[1]!.filename}\n`), /listed with SHA-256 a{64} but the archive dist\/darwin\.zip has b{64}/);
  });

  it('refuses a line for an archive not given, but only for names the caller counts as archives', () => {
    const extra = `${A}  ${archives[0]!.filename}\n${B}  ${archives[1]!.filename}\n${A}  terraform-provider-x_1.0.0_windows_amd64.zip\n`;
    refused(sums(extra), /lists terraform-provider-x_1\.0\.0_windows_amd64\.zip, which is not among the archives given/);
    expect(checkReleaseShasums(sums(extra), archives, 'SUMS', () => false)).toHaveLength(3);
  });
});
