import { beforeAll, describe, expect, it } from 'vitest';
import * as openpgp from 'openpgp';
import { address, fakeRelease, get, resolve, seed } from './helpers';
import { TEST_KEY } from '../fixtures/release';

// What Terraform checks before it installs a provider: the SHA256SUMS it downloads carries a detached
// signature by one of the download document's signing_keys. Everything here comes from the served bytes.
// (test/scripts/fixture-signatures.test.ts checks the same kind of fixture with GnuPG.)

const provider = address('acme', 'signed');
const path = '/v1/providers/acme/signed/1.0.0/download/linux/amd64';

interface DownloadDocument {
  shasums_url: string;
  shasums_signature_url: string;
  signing_keys: { gpg_public_keys: { key_id: string; ascii_armor: string }[] };
}

async function served(): Promise<{ doc: DownloadDocument; sums: Uint8Array; signature: Uint8Array }> {
  const response = await get(path);
  expect(response.status).toBe(200);
  const doc = await response.json<DownloadDocument>();
  const sums = await get(resolve(doc.shasums_url, path));
  const signature = await get(resolve(doc.shasums_signature_url, path));
  expect([sums.status, signature.status]).toEqual([200, 200]);
  return { doc, sums: new Uint8Array(await sums.arrayBuffer()), signature: new Uint8Array(await signature.arrayBuffer()) };
}

async function verify(armoredKey: string, sums: Uint8Array, signature: Uint8Array): Promise<{ valid: boolean; keyId: string }> {
  const [result] = (
    await openpgp.verify({
      message: await openpgp.createMessage({ binary: sums }),
      signature: await openpgp.readSignature({ binarySignature: signature }),
      verificationKeys: await openpgp.readKey({ armoredKey }),
      format: 'binary',
    })
  ).signatures;
  const valid = await result!.verified.then(
    () => true,
    () => false,
  );
  return { valid, keyId: result!.keyID.toHex().toUpperCase() };
}

beforeAll(async () => {
  await seed([fakeRelease(provider, '1.0.0', ['linux_amd64', 'darwin_arm64'])]);
});

describe('the served SHA256SUMS signature', () => {
  it('verifies with the served ascii_armor, made by the key the document names', async () => {
    const { doc, sums, signature } = await served();
    const keys = doc.signing_keys.gpg_public_keys;
    expect(keys.map((k) => k.key_id)).toEqual([TEST_KEY.key_id]);
    expect(keys[0]!.ascii_armor).toMatch(/^-----BEGIN PGP PUBLIC KEY BLOCK-----\n/);
    expect(await verify(keys[0]!.ascii_armor, sums, signature)).toEqual({ valid: true, keyId: keys[0]!.key_id });
  });

  it('does not verify over other SHA256SUMS bytes or with another key', async () => {
    const { doc, sums, signature } = await served();
    const armor = doc.signing_keys.gpg_public_keys[0]!.ascii_armor;
    const tampered = sums.slice();
    tampered[0] = tampered[0] === 0x30 ? 0x31 : 0x30; // the first hex digit of the first line's SHA-256
    expect((await verify(armor, tampered, signature)).valid).toBe(false);

    const other = await openpgp.generateKey({ type: 'ecc', curve: 'curve25519Legacy', userIDs: [{ name: 'someone else' }], format: 'armored' });
    await expect(verify(other.publicKey, sums, signature)).resolves.toMatchObject({ valid: false });
  });
});
