import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as openpgp from 'openpgp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKey, toSigningKey } from '../../scripts/lib/keys/keyring';
import { fingerprintOf } from '../../src/protocol/openpgp-packets';
import type { SigningKey } from '../../src/store/types';

// The key id and fingerprint a version page shows for an RSA key (the project's default, what
// `npm run keys -- generate` makes) must be the ones GnuPG prints for the same armored key, so a person
// can check them against `gpg --fingerprint`. GnuPG is the independent check; each case imports
// into a throwaway GNUPGHOME with show-only (nothing is kept).

let home: string;
let rsa4096: SigningKey;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'edge-registry-gpg-rsa-'));
  // Generated once for the file: RSA-4096 takes seconds.
  rsa4096 = (await generateSigningKey({ name: 'fingerprint test rsa' })).publicKey;
}, 180_000);
afterAll(() => {
  spawnSync('gpgconf', ['--homedir', home, '--kill', 'gpg-agent'], { stdio: 'ignore' }); // in case gpg started one
  rmSync(home, { recursive: true, force: true });
});

const gpg = (args: string[], input?: string) =>
  execFileSync('gpg', ['--homedir', home, '--batch', '--no-tty', ...args], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });

/** What GnuPG reads from an armored public key: the primary key's algorithm, bits, key id and fingerprint. */
function gpgView(armor: string): { algorithm: string; bits: number; keyId: string; fingerprint: string } {
  const file = join(home, `key-${Math.random().toString(36).slice(2)}.asc`);
  writeFileSync(file, armor);
  const lines = gpg(['--with-colons', '--import-options', 'show-only', '--import', file])
    .split('\n')
    .map((line) => line.split(':'));
  const pub = lines.find((f) => f[0] === 'pub')!;
  const fpr = lines.find((f) => f[0] === 'fpr')!; // the first fpr record follows pub: the primary key's
  return { algorithm: pub[3]!, bits: Number(pub[2]), keyId: pub[4]!, fingerprint: fpr[9]! };
}

describe('signing key fingerprints on pages, RSA', () => {
  it("an RSA-4096 v4 key as `npm run keys -- generate` makes it: our key id and fingerprint equal GnuPG's", () => {
    const seen = gpgView(rsa4096.ascii_armor);
    expect([seen.algorithm, seen.bits]).toEqual(['1', 4096]); // 1 = RSA: the case under test
    expect(fingerprintOf(rsa4096)).toBe(seen.fingerprint);
    expect(rsa4096.key_id).toBe(seen.keyId);
    expect(seen.fingerprint.endsWith(seen.keyId)).toBe(true);
    // A key id that does not belong to the key is not shown with someone else's fingerprint.
    expect(fingerprintOf({ ...rsa4096, key_id: '0123456789ABCDEF' })).toBe('');
  });

  it('an RSA-2048 key generated and exported by GnuPG itself (its own packet framing) reads the same', async () => {
    const params = join(home, 'params');
    writeFileSync(params, ['%no-protection', 'Key-Type: RSA', 'Key-Length: 2048', 'Key-Usage: sign', 'Name-Real: gpg made', '%commit', ''].join('\n'));
    gpg(['--gen-key', params]);
    const armor = gpg(['--armor', '--export', 'gpg made']);
    const fingerprintByGpg = /^fpr:+([0-9A-F]{40}):/m.exec(gpg(['--with-colons', '--fingerprint', 'gpg made']))![1];
    // The key as publish serves it: read by openpgp.js and re-armored, exactly like a key file passed to publish.
    const served = toSigningKey(await openpgp.readKey({ armoredKey: armor }));
    const seen = gpgView(served.ascii_armor);
    expect([seen.algorithm, seen.bits]).toEqual(['1', 2048]);
    expect(seen.fingerprint).toBe(fingerprintByGpg);
    expect(fingerprintOf(served)).toBe(fingerprintByGpg);
    expect(served.key_id).toBe(seen.keyId);
    // And GnuPG's own armor, as someone might paste it, parses to the same fingerprint.
    expect(fingerprintOf({ key_id: served.key_id, ascii_armor: armor })).toBe(fingerprintByGpg);
  }, 120_000);
});
