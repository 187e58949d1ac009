import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/protocol/errors';
import { checkProviderRelease, MAX_ARCHIVE_BYTES, type GivenReleaseFile, type ProviderReleaseInput } from '../../src/protocol/provider-release';

/**
 * The one pipeline of a provider release's checks (src/protocol/provider-release.ts), which the publish CLI
 * (on the files of a dist/) and the publish API (on the uploaded files, at the commit) both run: the limits
 * and the note that were once only one way's now hold for both, and nothing is read when the file list is
 * refused. The ways in run it end to end in test/scripts/publish-validation.test.ts and
 * test/worker/publish/providers.test.ts.
 */

const A = 'a'.repeat(64);
const archive = (platform: string, size = 100): GivenReleaseFile => ({
  filename: `terraform-provider-x_1.0.0_${platform}.zip`,
  size,
  sha256Hex: A,
  shown: `dist/${platform}.zip`,
});
const contents = (mode: number | null) => ({
  entries: [{ name: 'terraform-provider-x_v1.0.0', isDirectory: false, size: 10, unixMode: mode }],
  h1: `h1:${'A'.repeat(43)}=`,
});

function input(files: GivenReleaseFile[], overrides: Partial<ProviderReleaseInput> = {}): ProviderReleaseInput & { reads: string[] } {
  const reads: string[] = [];
  return {
    type: 'x',
    version: '1.0.0',
    files,
    readArchive: async (file) => {
      reads.push(file.filename);
      return contents(0o755);
    },
    readSmall: async (file) => {
      reads.push(file.filename);
      return new TextEncoder().encode('{"version": 1, "metadata": {"protocol_versions": ["6.0"]}}');
    },
    reads,
    ...overrides,
  };
}

describe('checkProviderRelease: one sequence for the CLI and the API', () => {
  it('more than 64 files (once the API only) is refused before anything is read', async () => {
    const oses = ['linux', 'darwin', 'freebsd', 'openbsd', 'netbsd', 'solaris', 'windows', 'illumos', 'plan9'];
    const arches = ['amd64', 'arm64', 'arm', '386', 'riscv64', 'ppc64le', 'mips', 's390x'];
    const files = oses.flatMap((os) => arches.map((arch) => archive(`${os}_${arch}`))).slice(0, 65);
    const run = input(files);
    await expect(checkProviderRelease(run)).rejects.toThrow(/^the release has 65 files; at most 64 are accepted$/);
    expect(run.reads).toEqual([]);
  });

  it('an archive over 2 GiB (once the API only) is refused with 413 before anything is read', async () => {
    const run = input([archive('linux_amd64', MAX_ARCHIVE_BYTES + 1)]);
    const refusal = checkProviderRelease(run);
    await expect(refusal).rejects.toBeInstanceOf(InputError);
    await expect(refusal).rejects.toMatchObject({
      status: 413,
      message: `dist/linux_amd64.zip is ${MAX_ARCHIVE_BYTES + 1} bytes; at most ${MAX_ARCHIVE_BYTES} are accepted`,
    });
    expect(run.reads).toEqual([]);
  });

  it('an executable not marked executable (once the CLI only) is a note, for any reader', async () => {
    const checked = await checkProviderRelease(input([archive('linux_amd64')], { readArchive: async () => contents(0o644) }));
    expect(checked.notes).toContain(
      'terraform-provider-x_1.0.0_linux_amd64.zip: terraform-provider-x_v1.0.0 is not marked executable in the zip (mode 644); Terraform may fail to start it',
    );
    expect(
      (
        await checkProviderRelease(
          input([archive('windows_amd64')], {
            readArchive: async () => ({ ...contents(0o644), entries: [{ ...contents(0o644).entries[0]!, name: 'terraform-provider-x_v1.0.0.exe' }] }),
          }),
        )
      ).notes,
    ).toEqual([expect.stringMatching(/^no terraform-provider-TYPE_VERSION_manifest\.json: serving protocols \["5\.0"\]/)]);
  });

  it("protocols: the manifest's, which declared ones must equal; declared ones without a manifest; else 5.0", async () => {
    const manifest = { filename: 'terraform-provider-x_1.0.0_manifest.json', size: 60, sha256Hex: A, shown: 'terraform-registry-manifest.json' };
    expect((await checkProviderRelease(input([archive('linux_amd64'), manifest]))).protocols).toEqual(['6.0']);
    await expect(checkProviderRelease(input([archive('linux_amd64'), manifest], { declaredProtocols: ['5.0'] }))).rejects.toThrow(
      /^"protocols" \["5\.0"\] differs from terraform-provider-x_1\.0\.0_manifest\.json's protocol_versions \["6\.0"\]$/,
    );
    expect((await checkProviderRelease(input([archive('linux_amd64')], { declaredProtocols: ['6.0'] }))).protocols).toEqual(['6.0']);
    expect((await checkProviderRelease(input([archive('linux_amd64')]))).protocols).toEqual(['5.0']);
  });
});
