import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { providerAddress } from '../../src/protocol/address';
import { fakeRelease, signRelease, TEST_KEY } from '../fixtures/release';
import { missing } from '../tools';

// The Worker tests' release fixtures carry real signatures (test/worker/signatures.test.ts verifies the served
// ones with openpgp inside workerd). Here GnuPG, an implementation that is not ours, checks the same kind of
// fixture: the signature of its SHA256SUMS by the key its version record publishes as ascii_armor.

const gpgMissing = spawnSync('gpg', ['--version'], { stdio: 'ignore' }).error !== undefined;

const home = mkdtempSync(join(tmpdir(), 'fixture-gnupg-'));
afterAll(() => {
  spawnSync('gpgconf', ['--homedir', home, '--kill', 'all'], { stdio: 'ignore' });
  rmSync(home, { recursive: true, force: true });
});

/** `gpg --verify SIG SUMS` with only the record's key in a throwaway GNUPGHOME; returns its exit code and status lines. */
function gpgVerify(sums: Uint8Array, signature: Uint8Array): { status: number | null; lines: string[] } {
  writeFileSync(join(home, 'SHA256SUMS'), sums);
  writeFileSync(join(home, 'SHA256SUMS.sig'), signature);
  const run = spawnSync('gpg', ['--batch', '--homedir', home, '--status-fd', '1', '--verify', join(home, 'SHA256SUMS.sig'), join(home, 'SHA256SUMS')], {
    encoding: 'utf8',
  });
  return { status: run.status, lines: run.stdout.split('\n') };
}

describe.skipIf(missing('gpg', !gpgMissing))('release fixture signatures under gpg --verify', () => {
  const release = fakeRelease(providerAddress('registry.example.com', 'acme', 'thing'), '1.2.3', ['linux_amd64', 'darwin_arm64']);
  const sums = () => release.bytes.get(release.record.shasumsFilename)!;
  const signature = () => release.bytes.get(release.record.shasumsSignatureFilename)!;

  it('verify with the record ascii_armor: a good signature by the key named in key_id', async () => {
    await signRelease(release);
    execFileSync('gpg', ['--batch', '--homedir', home, '--import'], { input: release.record.signingKey.ascii_armor, stdio: ['pipe', 'pipe', 'pipe'] });
    const { status, lines } = gpgVerify(sums(), signature());
    expect(status).toBe(0);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^\\[GNUPG:\\] GOODSIG ${TEST_KEY.key_id} `)));
    const fingerprint = inject('fixtureSigningKey').fingerprint;
    expect(fingerprint.endsWith(TEST_KEY.key_id)).toBe(true);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^\\[GNUPG:\\] VALIDSIG ${fingerprint} `)));
    // The files entry the store uploads carries the same signature bytes.
    const file = release.files.find((f) => f.filename === release.record.shasumsSignatureFilename)!;
    expect(await file.open()).toEqual(signature());
  });

  it('fails for SHA256SUMS bytes other than the signed ones', () => {
    const tampered = sums().slice();
    tampered[0] = tampered[0] === 0x30 ? 0x31 : 0x30;
    const { status, lines } = gpgVerify(tampered, signature());
    expect(status).toBe(1);
    expect(lines).toContainEqual(expect.stringMatching(/^\[GNUPG:\] BADSIG /));
  });

  it('signs the same SHA256SUMS to the same bytes, so re-seeding a release is not a different release', async () => {
    const again = await signRelease(fakeRelease(release.record.address, '1.2.3', ['linux_amd64', 'darwin_arm64']));
    expect(again.bytes.get(again.record.shasumsSignatureFilename)).toEqual(signature());
  });
});
